// Browsing the dashboard as a signed-in user does, for the tests that check a session holds
// across API servers: a page that records 401s and script errors, list and app pages in turn,
// each checked for a sign-in prompt.
import type { Browser, Page } from 'playwright-core';
import type { Test } from 'tap';
import { openContext } from './browser.js';


/** Opens `count` pages (the list, then an app's page, and so on over `apps`); none may ask to sign in. */
export async function browsePages(t: Test, page: Page, address: string, apps: string[], count = 20): Promise<void> {
  for (let i = 0; i < count; i++) {
    const name = apps[i % apps.length];
    if (i % 2 === 0) {
      await page.goto(`${address}/dashboard/`);
      await page.locator(`tr[data-app="${name}"]`).waitFor();
    } else {
      await page.goto(`${address}/dashboard/apps/${name}`);
      await page.locator('#facts').waitFor();
    }
    t.equal(await page.locator('#login').count(), 0, `page ${i + 1}: no sign-in prompt`);
  }
}

/** A laptop-sized page that records every 401 it receives and every error its scripts throw. */
export async function watchedPage(browser: Browser): Promise<{ page: Page; unauthorized: string[]; errors: string[] }> {
  const page = await (await openContext(browser, { viewport: { width: 1280, height: 900 } })).newPage();
  const unauthorized: string[] = [];
  page.on('response', (r) => { if (r.status() === 401) unauthorized.push(r.url()); });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(String(err)));
  return { page, unauthorized, errors };
}
