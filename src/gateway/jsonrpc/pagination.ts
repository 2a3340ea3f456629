/**
 * Reading a whole paginated MCP list (`tools/list`, `prompts/list`, …): each
 * page's items, following `nextCursor`, at most `maxPages` pages so that a
 * server handing out cursors forever cannot keep the gateway reading.
 */

/** The bound the gateway puts on the pages it reads of one list. */
export const MAX_LIST_PAGES = 100;

/**
 * The items under `key` of every page `fetchPage` returns. The first page is
 * asked for without params, each next one with the cursor the previous gave;
 * a page without an array under `key` adds nothing.
 */
export async function collectPages(
  fetchPage: (params: { cursor: string } | undefined) => Promise<Record<string, unknown>>,
  key: string,
  maxPages: number = MAX_LIST_PAGES,
): Promise<unknown[]> {
  const items: unknown[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const result = await fetchPage(cursor === undefined ? undefined : { cursor });
    const found = result[key];
    if (Array.isArray(found)) for (const item of found) items.push(item);
    cursor =
      typeof result.nextCursor === 'string' && result.nextCursor !== '' ? result.nextCursor : undefined;
    if (cursor === undefined) break;
  }
  return items;
}
