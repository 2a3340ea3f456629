/**
 * The record page's verification (loaded as /ledger/assets/verify.js): on the
 * Verify button it fetches the run's proof from the section's data-proof-url,
 * runs checks.ts on it with the key the person pasted, if any, and lists each
 * check. Results are written with textContent only: nothing the server or a
 * record holds becomes markup.
 */
import { parseJson } from '../../../canonical/json-text.ts';
import { type Check, type CheckStatus, outcomeOf, verifyRunProof } from './checks.ts';

const WORD: Readonly<Record<CheckStatus, string>> = {
  pass: 'Pass',
  fail: 'Fail',
  'not-checked': 'Not checked',
};

function item(check: Check): HTMLLIElement {
  const li = document.createElement('li');
  li.dataset.check = check.id;
  li.dataset.status = check.status;
  const word = document.createElement('strong');
  word.textContent = `${check.absent ? 'Nothing to check' : WORD[check.status]}:`;
  const title = document.createElement('span');
  title.textContent = ` ${check.title}. `;
  const detail = document.createElement('span');
  detail.textContent = check.detail;
  li.append(word, title, detail);
  return li;
}

/** What the page shows when the proof cannot be had: one failed check naming why. */
function unreachable(detail: string): Check[] {
  return [{ id: 'proof', status: 'fail', title: 'The server answered with a run proof', detail }];
}

async function fetchProof(url: string): Promise<unknown> {
  const response = await fetch(url, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
  const text = await response.text();
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}: ${text.slice(0, 200)}`);
  return parseJson(text);
}

async function run(section: HTMLElement, button: HTMLButtonElement, list: HTMLOListElement): Promise<void> {
  const url = section.dataset.proofUrl;
  const key = document.getElementById('trusted-key') as HTMLTextAreaElement | null;
  button.disabled = true;
  list.replaceChildren();
  delete list.dataset.outcome;
  list.setAttribute('aria-busy', 'true');
  let checks: Check[];
  try {
    checks =
      url === undefined
        ? unreachable('the page names no proof URL')
        : await verifyRunProof(await fetchProof(url), key?.value ?? '');
  } catch (error) {
    checks = unreachable(error instanceof Error ? error.message : String(error));
  }
  list.replaceChildren(...checks.map(item));
  list.dataset.outcome = outcomeOf(checks);
  list.removeAttribute('aria-busy');
  button.disabled = false;
}

const section = document.getElementById('verification');
const button = document.getElementById('verify-button');
const list = document.getElementById('verification-result');
if (section && button instanceof HTMLButtonElement && list instanceof HTMLOListElement) {
  button.addEventListener('click', () => {
    void run(section, button, list);
  });
}
