// Headless Chromium for the browser tests, launched one way: the machine's Chromium (CHROMIUM_PATH),
// no extras that phone home, and waits sized for a busy machine. Playwright's default of 30 s per
// wait is a timed assertion in disguise: CI shares its two cores with other work, so every page
// and context opened here waits up to BUSY_MACHINE_WAIT_MS for what the test says it waits for.
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Locator, type Page } from 'playwright-core';

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

/** Waits for `locator` as any wait here does; a failure says what the page's requests did (requestTrail). */
export async function waitExplained(locator: Locator, trail: () => string): Promise<void> {
  try {
    await locator.waitFor();
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${trail()}`);
  }
}
