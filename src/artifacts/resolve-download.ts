/**
 * The one order in which a download id is checked, for every way a download
 * is reached (`/api/download`, the gateway's `resources/read`, a tool taking
 * a `download_id`): the signed id first, with the keys alone (shape, key,
 * signature, expiry), then its grant in the store, then the grant's and the
 * artifact's lifetimes. Each failure is its DOWNLOAD_* code, and none of them
 * reads a byte of the artifact.
 */
import { type DownloadIdKeys, verifyDownloadId } from './download-ids.ts';
import type { DownloadIdFailure, GrantStore, ResolvedGrant } from './types.ts';

export type DownloadResolution = ({ ok: true } & ResolvedGrant) | { ok: false; code: DownloadIdFailure };

export async function resolveDownload(
  downloadId: string | undefined,
  source: { store: Pick<GrantStore, 'resolveGrant'>; keyring: DownloadIdKeys },
  now: number = Date.now(),
): Promise<DownloadResolution> {
  const checked = verifyDownloadId(downloadId, source.keyring, now);
  if (!checked.ok) return checked;
  const found = await source.store.resolveGrant(checked.grantId, now);
  if (!found) return { ok: false, code: 'DOWNLOAD_NOT_FOUND' };
  if (found.grant.expiresAt <= now) return { ok: false, code: 'DOWNLOAD_EXPIRED' };
  // The link outlived its bytes (swept, or kept for a shorter time): gone, not expired.
  if (Date.parse(found.artifact.expiresAt) <= now) return { ok: false, code: 'DOWNLOAD_NOT_FOUND' };
  return { ok: true, ...found };
}
