// Pieces the settings sections share: words, fields, buttons, copyable values, a confirm
// dialog, tables, and times typed in the store's time zone.

import { html, useState, useRef } from '../../lib.js';
import { api, newIdempotencyKey } from '../../api.js';
import { t, has, words as defineWords, getZone } from '../../i18n.js';
import { formSubmit, copyText, Dialog, useAction, useFlash, ErrorNote, Field, Badge, Loading, Pager } from '../../ui.js';

// settings.<p>.<k>, or settings.<k> when k has a dot; error.* words are global.
const key = (p, k) => (k.startsWith('error.') ? k : `settings.${k.includes('.') ? k : `${p}.${k}`}`);

/** Defines a section's words, one a line: `key|en-US|pt-BR` (no pt-BR: the same text);
 * returns its `t`. */
export function words(p, text) {
  const lines = text.trim().split('\n').map((l) => key(p, l.slice(0, l.indexOf('|'))) + l.slice(l.indexOf('|')));
  defineWords('', lines.join('\n'));
  return (k, v) => t(key(p, k), v);
}

const C = words('c', `
copy|Copy|Copiar
copied|Copied|Copiado
copy_failed|Select the text and copy it by hand.|Selecione o texto e copie manualmente.
once|Copy it now: it will not be shown again.|Copie agora: isto não será mostrado de novo.
save|Save|Salvar
saved|Saved.|Salvo.
done|Done|Concluir
edit|Edit|Editar
delete|Delete|Excluir
actions|Actions|Ações
never|Never|Nunca
zone_hint|Store time ({zone}).|Horário da loja ({zone}).
name|Name|Nome
email|E-mail
status|Status
last_used|Last used|Último uso
language|Language|Idioma
on|On|Ligado
off|Off|Desligado
locale.pt-BR|Português (Brasil)
locale.en-US|English (US)`);

/** The word for an enum value (settings.`p`.`value`), or the value itself when unknown. */
export function word(p, value) {
  const k = `settings.${p}.${value}`;
  return has(k) ? t(k) : value;
}

export const post = (path, body) => api.post(path, body, { idempotencyKey: newIdempotencyKey() });

/** `keyFor(body)`: one idempotency key per intended write. Retrying the same body reuses
 * its key (the server answers it once); a changed body is a new write with a new key. */
export function useIdempotency() {
  const last = useRef({});
  return (body) => {
    const b = JSON.stringify(body);
    if (last.current.body !== b) last.current = { body: b, key: newIdempotencyKey() };
    return last.current.key;
  };
}

export const submit = formSubmit;

/** A labelled input (a textarea given `rows`) bound to a state value. */
export function Input({ id, label, value, set, hint, error, ...rest }) {
  return html`<${Field} label=${label} id=${id} hint=${hint} error=${error}>
    <${rest.rows ? 'textarea' : 'input'} id=${id} value=${value} onInput=${(e) => set(e.target.value)} aria-invalid=${error ? 'true' : undefined}
      aria-describedby=${[hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(' ') || undefined} ...${rest} />
  <//>`;
}

export function Select({ id, label, value, set, options }) {
  return html`<${Field} label=${label} id=${id}>
    <select id=${id} value=${value} onChange=${(e) => set(e.target.value)}>
      ${options.map(([v, l]) => html`<option value=${v}>${l}</option>`)}
    </select>
  <//>`;
}

export const Btn = ({ cls, children, ...r }) => html`<button type="button" class=${cls ? `btn ${cls}` : 'btn'} ...${r}>${children}</button>`;

/** A button that runs `run` (disabled meanwhile), its error shown above it. */
export function Act({ run, children, ...r }) {
  const [go, busy, error] = useAction(run);
  return html`<${ErrorNote} error=${error} /><${Btn} disabled=${busy} onClick=${go} ...${r}>${children}<//>`;
}

export const Check = ({ label, on, set, cls = 'check', ...r }) =>
  html`<label class=${cls}><input type="checkbox" checked=${on} onChange=${(e) => set(e.target.checked)} ...${r} />${label}</label>`;

/** A checkbox per value of `items`; `set` takes an updater, so quick clicks add up. */
export const Picks = ({ items, picked, set, label, ...r }) =>
  items.map((v) => html`<${Check} value=${v} label=${label(v)} on=${picked.includes(v)} ...${r}
    set=${(on) => set((a) => (on ? [...a, v] : a.filter((x) => x !== v)))} />`);

export const Described = (code, text) => html`<span><span class="mono small">${code}</span><br /><span class="muted small">${text}</span></span>`;

export const OnOff = ({ on, yes = C('on'), no = C('off') }) => html`<${Badge} value=${on ? 'on' : 'off'} tones=${{ on: 'ok' }} label=${on ? yes : no} />`;

export const Actions = ({ close, id, busy, label, cls = 'primary' }) => html`<div class="dialog-actions">
  <${Btn} onClick=${close}>${t('ui.cancel')}<//>
  <button type="submit" class=${`btn ${cls}`} id=${id} disabled=${busy}>${label}</button>
</div>`;

/** A form saved by `run`, then "Saved." (or the text `run` returns; nothing if false). */
export function SaveForm({ id, btn, title, run, label = C('save'), card = true, children }) {
  const [flash, flashNode] = useFlash();
  const [save, busy, error] = useAction(async () => {
    const said = await run();
    if (said !== false) flash(typeof said === 'string' ? said : C('saved'));
  });
  return html`<form class=${card ? 'card' : ''} id=${id} onSubmit=${submit(save)}>
    ${title && html`<h2>${title}</h2>`}
    ${children}
    <${ErrorNote} error=${error} />
    <div class="row">
      <button type="submit" class="btn primary" id=${btn} disabled=${busy}>${label}</button>
      ${flashNode}
    </div>
  </form>`;
}

export function Head({ title, children }) {
  return html`<div class="page-head"><h1 tabindex="-1">${title}</h1>${children && html`<div class="actions">${children}</div>`}</div>`;
}

/** A usePage list as a table that stacks on phones: `cols` = [[label, cell(row), class]]
 * (no label: actions); `attrs(row)`: the row's attributes; `more(row)`: a row after it. */
export function Table({ id, list, none, cols, attrs, more = () => null }) {
  return html`<${Loading} res=${list} empty=${none && !list.loading && !list.rows.length && none}>
    <div class="table-wrap"><table class="table stacked" id=${id}>
      <thead><tr>${cols.map(([l, , c]) => html`<th scope="col" class=${c}>${l || html`<span class="sr-only">${C('actions')}</span>`}</th>`)}</tr></thead>
      <tbody>${list.rows.map((r) => html`<tr ...${attrs(r)}>${cols.map(([l, f, c]) => html`<td data-label=${l} class=${c}><div>${f(r)}</div></td>`)}</tr>${more(r)}`)}</tbody>
    </table></div>
  <//>
  <${Pager} list=${list} />`;
}

/** A read-only value with a Copy button; `once` warns it is shown once. */
export function CopyField({ id, label, value, multiline, once, hint }) {
  const ref = useRef(null);
  const [state, setState] = useState('');
  const copy = async () => setState((await copyText(value, ref.current)) ? 'ok' : 'fail');
  const p = { id, ref, readonly: true, class: 'mono', value, onFocus: (e) => e.target.select(), 'aria-describedby': once && `${id}-once` };
  return html`<div class="field">
    <label for=${id}>${label}</label>
    ${once && html`<p class="note warn" id=${`${id}-once`}>${C('once')}</p>`}
    <div class="copy-row">
      ${multiline ? html`<textarea rows="3" ...${p}></textarea>` : html`<input ...${p} />`}
      <${Btn} id=${`${id}-copy`} onClick=${copy}>${state === 'ok' ? `✓ ${C('copied')}` : C('copy')}<//>
    </div>
    ${hint && html`<p class="hint">${hint}</p>`}
    <p class="hint" role="status">${state === 'fail' ? C('copy_failed') : ''}</p>
  </div>`;
}

/** `[ask, node]`: ask(label, text, run) opens a confirm dialog that closes once `run` succeeds. */
export function useConfirm(id) {
  const [c, setC] = useState(null);
  const close = () => setC(null);
  const node = html`<${Dialog} open=${Boolean(c)} id=${id} title=${c ? c[0] : ''} onClose=${close}>
    ${c && html`<${ConfirmBody} id=${id} c=${c} close=${close} />`}
  <//>`;
  return [(...c) => setC(c), node];
}

function ConfirmBody({ id, c: [label, text, run], close }) {
  const [go, busy, error] = useAction(async () => {
    await run();
    close();
  });
  return html`<form onSubmit=${submit(go)}>
    <p>${text}</p>
    <${ErrorNote} error=${error} />
    <${Actions} close=${close} id=${`${id}-ok`} busy=${busy} label=${label} cls="danger" />
  </form>`;
}

// The zone's offset from UTC at an instant, in ms.
function offsetAt(ms) {
  const o = { timeZone: getZone(), hourCycle: 'h23' };
  for (const k of ['year', 'month', 'day', 'hour', 'minute', 'second']) o[k] = k === 'year' ? 'numeric' : '2-digit';
  const p = Object.fromEntries(new Intl.DateTimeFormat('en-US', o).formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute, +p.second) - Math.floor(ms / 1000) * 1000;
}

/** A `datetime-local` value ("2026-03-14T15:09") read in the store's zone, as RFC 3339 UTC. */
export function zoneToIso(local) {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}))?/.exec(local || '');
  if (!m) return null;
  const wall = Date.UTC(+m[1], +m[2] - 1, +m[3], +(m[4] || 0), +(m[5] || 0));
  return new Date(wall - offsetAt(wall - offsetAt(wall))).toISOString();
}

export const zoneInput = (ms) => new Date(ms + offsetAt(ms)).toISOString().slice(0, 16);

export const zoneHint = () => C('zone_hint', { zone: getZone() });
