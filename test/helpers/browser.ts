// Headless Chromium for the browser tests, launched one way: the machine's Chromium (CHROMIUM_PATH),
// no extras that phone home, and waits sized for a busy machine. Playwright's default of 30 s per
// wait is a timed assertion in disguise: CI shares its two cores with other work, so every page
// and context opened here waits up to BUSY_MACHINE_WAIT_MS for what the test says it waits for.
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Locator, type Page, type Request } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const BUSY_MACHINE_WAIT_MS = 240_000;

/** Launches Chromium and closes it when the test ends. */
export async function launchChromium(t: { teardown(fn: () => unknown): void }): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  t.teardown(() => browser.close());
  return browser;
}

/** A fresh context whose waits and navigations allow for a busy machine. */
export async function openContext(browser: Browser, options: BrowserContextOptions = {}): Promise<BrowserContext> {
  const context = await browser.newContext(options);
  context.setDefaultTimeout(BUSY_MACHINE_WAIT_MS);
  context.setDefaultNavigationTimeout(BUSY_MACHINE_WAIT_MS);
  return context;
}

/** A page in its own context (as `browser.newPage` makes one), with the same waits. */
export async function openPage(browser: Browser, options: BrowserContextOptions = {}): Promise<Page> {
  return (await openContext(browser, options)).newPage();
}

/**
 * What a page's requests did, said when a wait on the page fails: a page that scripts fill
 * (Spark's executors table) stays empty when one of its fetches failed, was refused, or never
 * got its answer, and the wait's own message cannot tell which.
 */
export function requestTrail(page: Page): () => string {
  const pending = new Map<object, string>();
  const problems: string[] = [];
  const name = (url: string) => new URL(url).pathname;
  page.on('request', (request) => pending.set(request, `${request.method()} ${name(request.url())}`));
  page.on('requestfinished', (request) => pending.delete(request));
  page.on('requestfailed', (request) => {
    pending.delete(request);
    problems.push(`${request.method()} ${name(request.url())}: failed (${request.failure()?.errorText ?? 'no reason'})`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.request().method()} ${name(response.url())}: HTTP ${response.status()}`);
  });
  return () => [
    problems.length ? `requests that failed: ${problems.join('; ')}` : 'no request failed',
    pending.size ? `still waiting for: ${[...pending.values()].join('; ')}` : 'none still waiting',
  ].join('\n');
}

/** Chromium cuts a page's requests when the machine's addresses change (the real node's pods add and remove interfaces beside the tests). */
const NETWORK_CHANGED = 'ERR_NETWORK_CHANGED';
const LOADS = 3;

/**
 * Opens `url` and waits for `locator` as any wait here does. A load whose requests Chromium cut
 * because the machine's network changed (a script of Spark's UI among them, and the page stays
 * empty) is loaded again, at most LOADS times; any other failure says what the page's requests did
 * (requestTrail).
 */
export async function openAndWait(page: Page, url: string, locator: Locator): Promise<void> {
  const trail = requestTrail(page);
  for (let load = 1; ; load++) {
    let cut: () => void = () => undefined;
    const networkChanged = new Promise<'cut'>((resolve) => { cut = () => resolve('cut'); });
    const onFailed = (request: Request) => { if (request.failure()?.errorText.includes(NETWORK_CHANGED)) cut(); };
    page.on('requestfailed', onFailed);
    try {
      const shown = page.goto(url).then(() => locator.waitFor()).then(() => 'shown' as const);
      shown.catch(() => undefined); // a load given up on below may still fail later
      const outcome = await Promise.race([shown, networkChanged]).catch((error: Error) => {
        if (error.message.includes(NETWORK_CHANGED)) return 'cut' as const;
        throw new Error(`${error.message}\n${trail()}`);
      });
      if (outcome === 'shown') return;
      if (load >= LOADS) throw new Error(`${LOADS} loads of ${url} were cut by network changes\n${trail()}`);
    } finally {
      page.off('requestfailed', onFailed);
    }
  }
}
