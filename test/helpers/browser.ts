// Headless Chromium for the browser tests, launched one way: the machine's Chromium (CHROMIUM_PATH),
// no extras that phone home, and waits sized for a busy machine. Playwright's default of 30 s per
// wait is a timed assertion in disguise: CI shares its two cores with other work, so every page
// and context opened here waits up to BUSY_MACHINE_WAIT_MS for what the test says it waits for.
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';

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
