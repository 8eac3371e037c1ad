// Reviews: the moderation queue, from the keyboard: A approves, R rejects, J/K move; a
// decided review leaves the queue and focus moves to the next.

import { html, useState, useEffect, useRef } from '../lib.js';
import { api } from '../api.js';
import { t, words } from '../i18n.js';
import { useCtx, href, navigate } from '../app.js';
import { usePage, useAction, useFlash, ErrorNote, Pager, Loading, Time, Badge, formSubmit } from '../ui.js';

words('reviews', `
title|Reviews|Avaliações
tabs|Review status|Status das avaliações
pending|To moderate|Para moderar
approved|Approved|Aprovadas
rejected|Rejected|Rejeitadas
all|All|Todas
keys|Keys: {a} approve, {r} reject, {j} / {k} next and previous.|Teclas: {a} aprova, {r} rejeita, {j} / {k} próxima e anterior.
approve|Approve|Aprovar
reject|Reject|Rejeitar
rating|{n} of 5 stars|{n} de 5 estrelas
verified|Verified purchase|Compra verificada
by|by {name}|por {name}
none|No reviews here.|Nenhuma avaliação aqui.
none_pending|All caught up: no review is waiting.|Tudo em dia: nenhuma avaliação esperando.
done.approved|Approved the review of {product}.|Avaliação de {product} aprovada.
done.rejected|Rejected the review of {product}.|Avaliação de {product} rejeitada.
reply|Reply|Responder
reply_label|Public reply|Resposta pública
reply_save|Save reply|Salvar resposta
replied|Your reply|Sua resposta
status.pending|Pending|Pendente
status.approved|Approved|Aprovada
status.rejected|Rejected|Rejeitada
pending_total|{n} waiting|{n} esperando
`);

const TABS = [
  ['pending', 'reviews.pending'],
  ['approved', 'reviews.approved'],
  ['rejected', 'reviews.rejected'],
  ['', 'reviews.all'],
];
const TONES = { pending: 'warn', approved: 'ok', rejected: 'bad' };

export function Reviews({ query }) {
  const { store } = useCtx();
  const asked = query.get('status') || 'pending';
  const status = asked === 'all' ? '' : asked;
  const list = usePage(`/stores/${store.id}/reviews`, { status, limit: 20, include_total: status === 'pending' });
  const [rows, setRows] = useState([]);
  const [focus, setFocus] = useState(0);
  const [flash, flashNode] = useFlash();
  const listRef = useRef(null);
  useEffect(() => {
    setRows(list.rows);
    setFocus(0);
  }, [list.data]);

  const [decide, busy, error] = useAction(async (review, next) => {
    const updated = await api.patch(`/stores/${store.id}/reviews/${review.id}`, { status: next });
    flash(t(`reviews.done.${next}`, { product: review.product_title }));
    setRows((rs) =>
      status && status !== next ? rs.filter((r) => r.id !== review.id) : rs.map((r) => (r.id === review.id ? updated : r)),
    );
  });

  // Keep the focused index inside the list as rows leave it.
  useEffect(() => {
    if (focus >= rows.length && rows.length > 0) setFocus(rows.length - 1);
  }, [rows.length]);
  // Move keyboard focus with the highlighted review, so screen readers follow.
  useEffect(() => {
    const el = listRef.current?.querySelector(`[data-index="${focus}"]`);
    if (el && listRef.current.contains(document.activeElement)) el.focus();
  }, [focus, rows]);

  // Keys work anywhere on the screen except while typing or in a dialog.
  const onKey = (e) => {
    if (e.target.closest?.('textarea, input, select, dialog') || e.ctrlKey || e.metaKey || e.altKey) return;
    const current = rows[focus];
    const key = e.key.toLowerCase();
    if (key === 'j' || key === 'arrowdown') {
      e.preventDefault();
      setFocus((f) => Math.min(rows.length - 1, f + 1));
    } else if (key === 'k' || key === 'arrowup') {
      e.preventDefault();
      setFocus((f) => Math.max(0, f - 1));
    } else if (key === 'a' && current && current.status !== 'approved') {
      e.preventDefault();
      decide(current, 'approved');
    } else if (key === 'r' && current && current.status !== 'rejected') {
      e.preventDefault();
      decide(current, 'rejected');
    }
  };

  const keyRef = useRef(onKey);
  keyRef.current = onKey;
  useEffect(() => {
    const on = (e) => keyRef.current(e);
    document.addEventListener('keydown', on);
    return () => document.removeEventListener('keydown', on);
  }, []);

  const pendingTotal = status === 'pending' ? list.total : undefined;
  return html`<section>
    <div class="page-head">
      <h1 tabindex="-1">${t('reviews.title')}</h1>
      ${pendingTotal !== undefined && html`<span class="badge warn" id="reviews-pending-total">${t('reviews.pending_total', { n: pendingTotal })}</span>`}
    </div>
    <nav class="tabs" aria-label=${t('reviews.tabs')}>
      ${TABS.map(
        ([value, label]) => html`<a href=${href('/reviews', { status: value || 'all' })} aria-current=${status === value ? 'page' : undefined}
          onClick=${(e) => {
            e.preventDefault();
            navigate(`/reviews?status=${value || 'all'}`);
          }}>${t(label)}</a>`,
      )}
    </nav>
    <p class="muted small">${keysHelp()}</p>
    ${flashNode}
    <${ErrorNote} error=${error} />
    <${Loading} res=${list} empty=${!list.loading && rows.length === 0 && (status === 'pending' ? t('reviews.none_pending') : t('reviews.none'))}>
      <ol class="review-list" ref=${listRef}>
        ${rows.map(
          (r, i) => html`<li key=${r.id}>
            <${ReviewCard} review=${r} index=${i} focused=${i === focus} busy=${busy}
              onFocus=${() => setFocus(i)} onDecide=${(next) => decide(r, next)}
              onReplied=${(u) => setRows((rs) => rs.map((x) => (x.id === u.id ? u : x)))} />
          </li>`,
        )}
      </ol>
    <//>
    <${Pager} list=${list} />
  </section>`;
}

function keysHelp() {
  const parts = t('reviews.keys', { a: '\u0001A\u0001', r: '\u0001R\u0001', j: '\u0001J\u0001', k: '\u0001K\u0001' }).split('\u0001');
  return parts.map((p, i) => (i % 2 ? html`<kbd>${p}</kbd>` : p));
}

function Stars({ n }) {
  return html`<span class="stars" role="img" aria-label=${t('reviews.rating', { n })}>${'★'.repeat(n)}${'☆'.repeat(5 - n)}</span>`;
}

function ReviewCard({ review: r, index, focused, busy, onFocus, onDecide, onReplied }) {
  const { store } = useCtx();
  const [replying, setReplying] = useState(false);
  const [reply, setReply] = useState(r.reply || '');
  const [save, saving, saveError] = useAction(async () => {
    const u = await api.patch(`/stores/${store.id}/reviews/${r.id}`, { status: r.status, reply: reply.trim() || null });
    onReplied(u);
    setReplying(false);
  });
  const labelId = `review-${r.id}-title`;
  return html`<article class=${`card review ${focused ? 'focused' : ''}`} tabindex=${focused ? 0 : -1}
    data-index=${index} data-review-id=${r.id} aria-labelledby=${labelId} onFocus=${onFocus}>
    <div class="review-head">
      <div>
        <h2 id=${labelId}>${r.title || '—'}</h2>
        <p class="muted small">
          <a href=${`#/products/${r.product_id}`}>${r.product_title}</a> · ${t('reviews.by', { name: r.author_name })} · <${Time} at=${r.created_at} relative />
        </p>
      </div>
      <div class="row">
        <${Stars} n=${r.rating} />
        ${r.is_verified_purchase && html`<span class="badge info">${t('reviews.verified')}</span>`}
        <${Badge} value=${r.status} tones=${TONES} label=${t(`reviews.status.${r.status}`)} />
      </div>
    </div>
    <p class="review-body">${r.body}</p>
    ${r.reply && !replying && html`<blockquote class="reply"><strong>${t('reviews.replied')}:</strong> ${r.reply}</blockquote>`}
    ${replying &&
    html`<form onSubmit=${formSubmit(save)}>
      <${ErrorNote} error=${saveError} />
      <label class="label" for=${`reply-${r.id}`}>${t('reviews.reply_label')}</label>
      <textarea id=${`reply-${r.id}`} value=${reply} maxlength="2000" onInput=${(e) => setReply(e.target.value)}></textarea>
      <div class="dialog-actions">
        <button type="button" class="btn" onClick=${() => setReplying(false)}>${t('ui.cancel')}</button>
        <button type="submit" class="btn primary" disabled=${saving}>${t('reviews.reply_save')}</button>
      </div>
    </form>`}
    <div class="row review-actions">
      ${r.status !== 'approved' &&
      html`<button type="button" class="btn primary" data-action="approve" disabled=${busy} onClick=${() => onDecide('approved')}>
        ${t('reviews.approve')} <kbd aria-hidden="true">A</kbd></button>`}
      ${r.status !== 'rejected' &&
      html`<button type="button" class="btn" data-action="reject" disabled=${busy} onClick=${() => onDecide('rejected')}>
        ${t('reviews.reject')} <kbd aria-hidden="true">R</kbd></button>`}
      ${!replying && html`<button type="button" class="btn ghost" onClick=${() => setReplying(true)}>${t('reviews.reply')}</button>`}
    </div>
  </article>`;
}
