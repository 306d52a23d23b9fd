// Browsing the dashboard as a signed-in user does, for the tests that check a session holds
// across API servers: list and app pages in turn, each checked for a sign-in prompt.
import type { Page } from 'playwright-core';
import type { Test } from 'tap';


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
