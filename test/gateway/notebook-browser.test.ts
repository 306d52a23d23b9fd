// Notebook 7 (the `notebook` package, real) in headless Chromium, pointed at the gateway of
// `submission-service local`: open a notebook whose kernel is a config template, run a Spark
// cell, see its output. The screenshot is kept in docs/screenshots/gateway-notebook.png.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Locator } from 'playwright-core';
import t from 'tap';
import { repoRoot } from '../helpers/api.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { keyedDataDir, startJupyter, toolsEnv } from './jupyter.js';
import { launchChromium, openPage } from '../helpers/browser.js';

const skip = !realSpark() || !toolsEnv() ? 'needs the Spark and tools virtualenvs' : false;

t.test('Notebook 7 runs a Spark cell on a template kernel', { skip, timeout: 600_000 }, async (t) => {
  const { root, dataDir, key, admin } = keyedDataDir(t, 'notebook');
  const service = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on'] });
  const created = await http(service.url, 'POST', '/api/config-templates/', { name: 'spark-notebook', config: { pythonVersion: '3', engineVersion: '3.5.7' } }, { 'x-api-key': admin });
  t.equal(created.status, 201, created.text);

  const jupyter = await startJupyter(t, root, `${service.url}/notebooks`, key, 'notebook');
  const notebookDir = join(root, `jupyter-${new URL(jupyter.url).port}`, 'notebooks');
  writeFileSync(join(notebookDir, 'spark.ipynb'), JSON.stringify({
    nbformat: 4, nbformat_minor: 5,
    metadata: { kernelspec: { name: 'spark-notebook', display_name: 'Spark 3.5.7 - spark-notebook', language: 'python' } },
    cells: [{ cell_type: 'code', id: 'spark-sum', metadata: {}, execution_count: null, outputs: [],
      source: 'print("sum:", sc.parallelize(range(100)).sum())\nspark.range(10).count()' }],
  }));

  const browser = await launchChromium(t);
  const page = await openPage(browser, { viewport: { width: 1280, height: 800 } });
  // The kernel messages the page sends and receives, to say what was missing if a wait fails.
  const frames: string[] = [];
  page.on('websocket', (socket) => {
    if (!socket.url().includes('/channels')) return;
    const note = (way: string) => (frame: { payload: string | Buffer }) => {
      try {
        const m = JSON.parse(String(frame.payload)) as { channel?: string; header?: { msg_type?: string }; parent_header?: { msg_id?: string }; content?: { execution_state?: string } };
        frames.push(`${way} ${m.channel} ${m.header?.msg_type}${m.content?.execution_state ? `:${m.content.execution_state}` : ''} parent=${m.parent_header?.msg_id?.slice(0, 8) ?? '-'}`);
      } catch {
        frames.push(`${way} (not JSON, ${String(frame.payload).length} bytes)`);
      }
    };
    frames.push(`open ${socket.url().replace(/token=[^&]+/, 'token=…')}`);
    socket.on('framesent', note('>'));
    socket.on('framereceived', note('<'));
    socket.on('close', () => frames.push('close'));
  });
  await page.goto(`${jupyter.url}/notebooks/spark.ipynb?token=${jupyter.token}`);
  await page.locator('.jp-Notebook .jp-Cell .cm-content').first().waitFor({ timeout: 120_000 });
  // The page started the template's kernel by itself: wait until it is idle (Spark ready).
  const deadline = Date.now() + 240_000;
  for (;;) {
    const kernels = (await http(service.url, 'GET', `/notebooks/api/kernels?token=${key}`)).json as Array<{ name: string; execution_state: string }>;
    if (kernels.some((k) => k.name === 'spark-notebook' && k.execution_state === 'idle')) break;
    if (Date.now() > deadline) throw new Error(`the page's kernel did not become idle: ${JSON.stringify(kernels)}`);
    await new Promise((ok) => setTimeout(ok, 500));
  }
  await page.locator('.jp-Notebook .jp-Cell .cm-content').first().click();
  await page.keyboard.press('Shift+Enter');
  // A wait that fails leaves a screenshot beside the test's temp dir, and says the prompts' text
  // and the Jupyter server's last log lines.
  const shown = async (what: Locator, timeout: number) => {
    try {
      await what.first().waitFor({ timeout });
    } catch (error) {
      await page.screenshot({ path: join(root, '..', 'gateway-notebook-failed.png') });
      t.comment(`prompt: ${JSON.stringify(await page.locator('.jp-InputPrompt').allInnerTexts())}; failed page: ${join(root, '..', 'gateway-notebook-failed.png')}`);
      t.comment(`jupyter server's log, last lines:\n${jupyter.output().split('\n').slice(-40).join('\n')}`);
      t.comment(`the page's kernel messages, last 60:\n${frames.slice(-60).join('\n')}`);
      throw error;
    }
  };
  await shown(page.locator('.jp-OutputArea-output', { hasText: 'sum: 4950' }), 90_000);
  await shown(page.locator('.jp-OutputArea-executeResult'), 120_000);
  t.match(await page.locator('.jp-OutputArea').first().innerText(), /sum: 4950[\s\S]*10/, 'the Spark cell printed its output');
  t.match(await page.locator('body').innerText(), /spark-notebook/, 'the template kernel is the one shown');
  // The reply to the cell, not only its output: the prompt stays [*] until execute_reply arrives
  // (test/gateway/shell-replies.test.ts keeps the launcher's missing-replies bug fixed).
  await shown(page.locator('.jp-InputPrompt', { hasText: '[1]' }), 30_000);
  const shots = join(repoRoot, 'docs', 'screenshots');
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, 'gateway-notebook.png') });
});
