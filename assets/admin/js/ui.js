// What every screen shares: data hooks (a resource, a keyset-paged list), the action hook
// that disables a button while its request runs, and small components.

import { html, useState, useEffect, useRef, useCallback } from './lib.js';
import { api } from './api.js';
import { t, words, errorMessage, money, dateTime, ago } from './i18n.js';

words('ui', `
loading|Loading…|Carregando…
retry|Try again|Tentar de novo
next|Next|Próxima
previous|Previous|Anterior
close|Close|Fechar
cancel|Cancel|Cancelar
empty|Nothing here yet.|Nada aqui ainda.
pages|Pages|Páginas
trace|Trace id|Id de rastreio
`);

/** Loads `load()` when `deps` change: `{ data, error, loading, reload, setData }`. */
export function useResource(load, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const seq = useRef(0);
  const run = useCallback(() => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true, error: null }));
    load().then(
      (data) => mine === seq.current && setState({ data, error: null, loading: false }),
      (error) => mine === seq.current && setState((s) => ({ ...s, error, loading: false })),
    );
  }, deps);
  useEffect(run, [run]);
  const setData = (fn) =>
    setState((s) => ({ ...s, data: typeof fn === 'function' ? fn(s.data) : fn }));
  return { ...state, reload: run, setData };
}

/** A keyset-paged list (the Page envelope): keeps the cursors walked so Previous works. */
export function usePage(path, params, deps) {
  const key = JSON.stringify([path, params]);
  const [walk, setWalk] = useState({ key, cursors: [null] });
  // New filters start at the first page in this very render, not an effect later.
  const cursors = walk.key === key ? walk.cursors : [null];
  const setCursors = (fn) => setWalk({ key, cursors: fn(cursors) });
  // ...and forget the old walk, so coming back to a filter starts at its first page too.
  useEffect(() => {
    if (walk.key !== key) setWalk({ key, cursors: [null] });
  }, [key]);
  const cursor = cursors[cursors.length - 1];
  const res = useResource(
    () => (path ? api.get(path, { ...params, cursor: cursor || undefined }) : Promise.resolve(null)),
    [key, cursor, ...(deps || [])],
  );
  const page = res.data;
  return {
    ...res,
    rows: page?.data || [],
    total: page?.total,
    index: cursors.length - 1,
    hasMore: Boolean(page?.has_more && page?.next_cursor),
    hasPrev: cursors.length > 1,
    next: () => page?.next_cursor && setCursors((c) => [...c, page.next_cursor]),
    prev: () => setCursors((c) => (c.length > 1 ? c.slice(0, -1) : c)),
  };
}

/** A form's onSubmit that keeps the page and runs `fn`. */
export const formSubmit = (fn) => (e) => {
  e.preventDefault();
  fn();
};

/** Wraps an async action: `[run, busy, error, setError]`; `run` ignores calls while busy. */
export function useAction(fn) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const running = useRef(false);
  const run = async (...args) => {
    if (running.current) return undefined;
    running.current = true;
    setBusy(true);
    setError(null);
    try {
      return await fn(...args);
    } catch (e) {
      setError(e);
      return undefined;
    } finally {
      running.current = false;
      setBusy(false);
    }
  };
  return [run, busy, error, setError];
}

/** The API error as a sentence, with its field messages and trace id when present. */
export function ErrorNote({ error, onRetry }) {
  if (!error) return null;
  const fields = error.details?.fields;
  return html`<div class="note bad" role="alert">
    <p>${errorMessage(error)}</p>
    ${fields &&
    html`<ul>
      ${Object.entries(fields).map(([f, m]) => html`<li><code>${f}</code>: ${m}</li>`)}
    </ul>`}
    ${error.traceId && html`<p class="muted small">${t('ui.trace')}: <code>${error.traceId}</code></p>`}
    ${onRetry && html`<button type="button" class="btn" onClick=${onRetry}>${t('ui.retry')}</button>`}
  </div>`;
}

/** A labelled form field; `id` ties the label to the control passed as the child. */
export function Field({ label, id, hint, error, children }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    ${children}
    ${hint && html`<p class="hint" id=${`${id}-hint`}>${hint}</p>`}
    ${error && html`<p class="field-error" id=${`${id}-error`}>${error}</p>`}
  </div>`;
}

/** A modal dialog on the native <dialog> (focus kept inside, Esc closes). */
/** `locked` keeps it open (Esc and ✕ do nothing) while its request runs. */
export function Dialog({ open, title, onClose, children, id, locked }) {
  const ref = useRef(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  const titleId = `${id || 'dialog'}-title`;
  return html`<dialog ref=${ref} class="dialog" aria-labelledby=${titleId} onClose=${onClose} id=${id}
    onCancel=${(e) => locked && e.preventDefault()}>
    <div class="dialog-head">
      <h2 id=${titleId}>${title}</h2>
      <button type="button" class="btn ghost icon" aria-label=${t('ui.close')} disabled=${locked} onClick=${onClose}>✕</button>
    </div>
    ${open && children}
  </dialog>`;
}

/** Previous / Next for a `usePage` list. */
export function Pager({ list, label }) {
  if (!list.hasPrev && !list.hasMore) return null;
  return html`<nav class="pager" aria-label=${label || t('ui.pages')}>
    <button type="button" class="btn" disabled=${!list.hasPrev || list.loading} onClick=${list.prev}>
      ← ${t('ui.previous')}
    </button>
    <span class="muted">${list.index + 1}</span>
    <button type="button" class="btn" disabled=${!list.hasMore || list.loading} onClick=${list.next}>
      ${t('ui.next')} →
    </button>
  </nav>`;
}

/** Loading, error and empty states around a list or a record. */
export function Loading({ res, empty, children }) {
  if (res.error) return html`<${ErrorNote} error=${res.error} onRetry=${res.reload} />`;
  if (res.loading && !res.data) return html`<p class="muted" role="status">${t('ui.loading')}</p>`;
  if (empty) return html`<p class="empty">${typeof empty === 'string' ? empty : t('ui.empty')}</p>`;
  return children;
}

export function Money({ cents, currency }) {
  return html`<span class="num">${money(cents, currency)}</span>`;
}

export function Time({ at, relative }) {
  if (!at) return null;
  return html`<time datetime=${at} title=${dateTime(at)}>${relative ? ago(at) : dateTime(at)}</time>`;
}

/** A status word in a colored pill; `tones` maps values to ok / warn / bad / info. */
export function Badge({ value, tones = {}, label }) {
  const tone = tones[value] || 'muted';
  return html`<span class=${`badge ${tone}`}>${label || value}</span>`;
}

/** A polite live region for "Saved." and similar confirmations. */
export function useFlash() {
  const [msg, setMsg] = useState('');
  const timer = useRef(0);
  const flash = (m) => {
    setMsg(m);
    clearTimeout(timer.current);
    timer.current = setTimeout(() => setMsg(''), 4000);
  };
  const node = html`<p class="flash" role="status" aria-live="polite">${msg}</p>`;
  return [flash, node];
}

/** Copies text to the clipboard, falling back to selecting it where the API is missing
 * (plain http is not a secure context). */
export async function copyText(text, input) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    if (input) {
      input.focus();
      input.select();
      return document.execCommand && document.execCommand('copy');
    }
    return false;
  }
}
