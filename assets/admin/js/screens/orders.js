// Orders: the list (status, number or customer search, keyset pages) and an order's page:
// items, payments, refunds, its allowed status moves as buttons, and the refund dialog.

import { html, useState, useEffect, useRef } from '../lib.js';
import { api, newIdempotencyKey } from '../api.js';
import { t, words, money, parseMoney, moneyInput } from '../i18n.js';
import { useCtx, href, navigate } from '../app.js';
import {
  useResource,
  usePage,
  useAction,
  useFlash,
  ErrorNote,
  Field,
  Dialog,
  Pager,
  Loading,
  Money,
  Time,
  Badge,
  formSubmit,
} from '../ui.js';

words('orders', `
title|Orders|Pedidos
status|Status
all|All|Todos
search|Order number or customer|Nº do pedido ou cliente
search_hint|#1042, name, e-mail or phone|#1042, nome, e-mail ou telefone
for_number|Order #{n}|Pedido nº {n}
search_none|No customer matches.|Nenhum cliente encontrado.
find|Find|Buscar
for_customer|Orders of {name}|Pedidos de {name}
clear|Show all orders|Mostrar todos os pedidos
number|Order|Pedido
date|Date|Data
items|Items|Itens
total|Total
none|No orders match.|Nenhum pedido encontrado.
back|All orders|Todos os pedidos
order|Order #{n}|Pedido nº {n}
customer|Customer|Cliente
no_customer|No customer|Sem cliente
placed|Placed|Feito em
source|Source|Origem
note|Note|Observação
product|Product|Produto
qty|Qty|Qtd.
unit|Unit price|Preço unit.
subtotal|Subtotal
discount|Discount|Desconto
shipping|Shipping|Frete
refunded|Refunded|Reembolsado
payments|Payments|Pagamentos
no_payments|No payment yet.|Nenhum pagamento ainda.
provider|Method|Meio
amount|Amount|Valor
actions|Move the order|Mudar o pedido
no_actions|This order has no further status.|Este pedido não tem próximo status.
refund|Refund…|Reembolsar…
refund_title|Refund order #{n}|Reembolsar pedido nº {n}
refund_amount|Amount|Valor
refund_max|Up to {max} can still be refunded.|Ainda é possível reembolsar até {max}.
refund_reason|Reason (optional)|Motivo (opcional)
refund_submit|Refund {amount}|Reembolsar {amount}
refund_bad_amount|Type an amount such as {example}.|Digite um valor como {example}.
refund_done|Refund of {amount} recorded ({status}).|Reembolso de {amount} registrado ({status}).
moved|Order moved to “{status}”.|Pedido movido para “{status}”.
go.paid|Mark as paid|Marcar como pago
go.fulfilled|Mark as fulfilled|Marcar como separado
go.shipped|Mark as shipped|Marcar como enviado
go.delivered|Mark as delivered|Marcar como entregue
go.cancelled|Cancel order|Cancelar pedido
go.pending|Back to pending|Voltar para pendente
`);
words('status', `
pending|Pending|Pendente
paid|Paid|Pago
fulfilled|Fulfilled|Separado
shipped|Shipped|Enviado
delivered|Delivered|Entregue
cancelled|Cancelled|Cancelado
partially_refunded|Partly refunded|Reembolso parcial
refunded|Refunded|Reembolsado
`);

const STATUSES = ['pending', 'paid', 'fulfilled', 'shipped', 'delivered', 'cancelled', 'partially_refunded', 'refunded'];
export const ORDER_TONES = {
  pending: 'warn',
  paid: 'info',
  fulfilled: 'info',
  shipped: 'info',
  delivered: 'ok',
  cancelled: 'muted',
  partially_refunded: 'warn',
  refunded: 'bad',
};
// Refund states come from refunds, not from a status change.
const BY_REFUND = new Set(['partially_refunded', 'refunded']);

export function OrderStatus({ status }) {
  return html`<${Badge} value=${status} tones=${ORDER_TONES} label=${t(`status.${status}`)} />`;
}

export function Orders({ parts, query }) {
  if (parts[0]) return html`<${OrderPage} id=${parts[0]} />`;
  return html`<${OrderList} query=${query} />`;
}

function OrderList({ query }) {
  const { store } = useCtx();
  const status = query.get('status') || '';
  const customerId = query.get('customer_id') || '';
  const number = query.get('number') || '';
  const list = usePage(`/stores/${store.id}/orders`, { status, customer_id: customerId, number, limit: 25 });
  const setFilter = (next) =>
    navigate(href('/orders', { status, customer_id: customerId, number, ...next }).slice(1));
  return html`<section>
    <div class="page-head"><h1 tabindex="-1">${t('orders.title')}</h1></div>
    <div class="toolbar">
      <div class="field">
        <label for="orders-status">${t('orders.status')}</label>
        <select id="orders-status" value=${status} onChange=${(e) => setFilter({ status: e.target.value })}>
          <option value="">${t('orders.all')}</option>
          ${STATUSES.map((s) => html`<option value=${s}>${t(`status.${s}`)}</option>`)}
        </select>
      </div>
      <${OrderSearch} customerId=${customerId} number=${number} onPick=${setFilter} />
    </div>
    <${Loading} res=${list} empty=${!list.loading && list.rows.length === 0 && t('orders.none')}>
      <div class="table-wrap">
        <table class="table stacked">
          <thead><tr>
            <th scope="col">${t('orders.number')}</th>
            <th scope="col">${t('orders.date')}</th>
            <th scope="col">${t('orders.status')}</th>
            <th scope="col">${t('orders.items')}</th>
            <th scope="col" class="num">${t('orders.total')}</th>
          </tr></thead>
          <tbody>
            ${list.rows.map(
              (o) => html`<tr>
                <td data-label=${t('orders.number')}><a href=${`#/orders/${o.id}`}>#${o.number}</a></td>
                <td data-label=${t('orders.date')}><${Time} at=${o.created_at} /></td>
                <td data-label=${t('orders.status')}><${OrderStatus} status=${o.status} /></td>
                <td data-label=${t('orders.items')}>${itemsSummary(o.items)}</td>
                <td data-label=${t('orders.total')} class="num"><${Money} cents=${o.total_cents} currency=${o.currency} /></td>
              </tr>`,
            )}
          </tbody>
        </table>
      </div>
    <//>
    <${Pager} list=${list} />
  </section>`;
}

function itemsSummary(items) {
  if (!items?.length) return '';
  const first = items[0].title;
  return items.length === 1 ? `${items[0].quantity} × ${first}` : `${first} +${items.length - 1}`;
}

/** An order number ("1042", "#1042") goes straight to that order's row; other text finds
 * customers by name, e-mail or phone, and picking one filters the orders by them. */
function OrderSearch({ customerId, number, onPick }) {
  const { store } = useCtx();
  const [text, setText] = useState('');
  const [found, setFound] = useState(null);
  const picked = useResource(
    () => (customerId ? api.get(`/stores/${store.id}/customers/${customerId}`) : Promise.resolve(null)),
    [customerId],
  );
  const [search, busy, error] = useAction(async () => {
    const q = text.trim();
    if (!q) return setFound(null);
    if (/^#?\d{1,15}$/.test(q)) return onPick({ number: q.replace('#', ''), customer_id: '' });
    setFound((await api.get(`/stores/${store.id}/customers`, { search: q, limit: 8 })).data);
  });
  if (customerId || number) {
    return html`<div class="field grow">
      <span class="label">${t('orders.search')}</span>
      <div class="row">
        <strong>${number ? t('orders.for_number', { n: number }) : picked.data ? t('orders.for_customer', { name: picked.data.name }) : '…'}</strong>
        <button type="button" class="link" id="orders-search-clear" onClick=${() => onPick({ customer_id: '', number: '' })}>${t('orders.clear')}</button>
      </div>
    </div>`;
  }
  return html`<form class="field grow" role="search" onSubmit=${formSubmit(search)}>
    <label for="orders-search">${t('orders.search')}</label>
    <div class="row">
      <input id="orders-search" type="search" placeholder=${t('orders.search_hint')} value=${text}
        class="grow-input" onInput=${(e) => setText(e.target.value)} />
      <button class="btn" type="submit" disabled=${busy}>${t('orders.find')}</button>
    </div>
    <${ErrorNote} error=${error} />
    ${found &&
    (found.length
      ? html`<ul class="picks">
          ${found.map(
            (c) => html`<li><button type="button" class="link" onClick=${() => onPick({ customer_id: c.id })}>${c.name}</button>
              <span class="muted small"> ${c.email || c.phone || ''}</span></li>`,
          )}
        </ul>`
      : html`<p class="muted small">${t('orders.search_none')}</p>`)}
  </form>`;
}

function OrderPage({ id }) {
  const { store } = useCtx();
  const order = useResource(() => api.get(`/stores/${store.id}/orders/${id}`), [id]);
  const o = order.data;
  const customer = useResource(
    () => (o?.customer_id ? api.get(`/stores/${store.id}/customers/${o.customer_id}`) : Promise.resolve(null)),
    [o?.customer_id],
  );
  const [flash, flashNode] = useFlash();
  const [refunding, setRefunding] = useState(false);
  // The refund's Idempotency-Key outlives the dialog: it is dropped only on a definite
  // answer, so a refund whose answer was lost is never sent again under a new key.
  const refundKey = useRef(null);
  const [move, moving, moveError] = useAction(async (status) => {
    const next = await api.patch(`/stores/${store.id}/orders/${id}`, { status });
    order.setData(next);
    flash(t('orders.moved', { status: t(`status.${next.status}`) }));
  });
  const refundable = o ? o.payments.reduce((s, p) => s + Math.max(0, p.amount_cents - p.refunded_cents), 0) : 0;
  const moves = o ? o.allowed_status_transitions.filter((s) => !BY_REFUND.has(s)) : [];
  return html`<section>
    <a class="crumb" href="#/orders">← ${t('orders.back')}</a>
    <${Loading} res=${order}>
      ${o &&
      html`<div class="page-head">
          <h1 tabindex="-1">${t('orders.order', { n: o.number })} <${OrderStatus} status=${o.status} /></h1>
          <div class="actions">
            ${refundable > 0 &&
            html`<button type="button" class="btn" onClick=${() => setRefunding(true)}>${t('orders.refund')}</button>`}
          </div>
        </div>
        ${flashNode}
        <div class="grid-2">
          <div>
            <div class="table-wrap">
              <table class="table stacked">
                <caption class="sr-only">${t('orders.items')}</caption>
                <thead><tr>
                  <th scope="col">${t('orders.product')}</th>
                  <th scope="col" class="num">${t('orders.qty')}</th>
                  <th scope="col" class="num">${t('orders.unit')}</th>
                  <th scope="col" class="num">${t('orders.total')}</th>
                </tr></thead>
                <tbody>
                  ${o.items.map(
                    (i) => html`<tr>
                      <td data-label=${t('orders.product')}><div><a href=${`#/products/${i.product_id}`}>${i.title}</a>
                        <div class="muted small">${i.variant_title} · <span class="mono">${i.sku}</span></div></div></td>
                      <td data-label=${t('orders.qty')} class="num">${i.quantity}</td>
                      <td data-label=${t('orders.unit')} class="num"><${Money} cents=${i.unit_price_cents} currency=${o.currency} /></td>
                      <td data-label=${t('orders.total')} class="num"><${Money} cents=${i.total_cents} currency=${o.currency} /></td>
                    </tr>`,
                  )}
                </tbody>
              </table>
            </div>
            <div class="card">
              <dl class="facts">
                <dt>${t('orders.subtotal')}</dt><dd class="num"><${Money} cents=${o.subtotal_cents} currency=${o.currency} /></dd>
                ${o.discount_cents > 0 && html`<dt>${t('orders.discount')}</dt><dd class="num">− ${money(o.discount_cents, o.currency)}</dd>`}
                <dt>${t('orders.shipping')}</dt><dd class="num"><${Money} cents=${o.shipping_cents} currency=${o.currency} /></dd>
                <dt>${t('orders.total')}</dt><dd class="num"><strong><${Money} cents=${o.total_cents} currency=${o.currency} /></strong></dd>
                ${o.refunded_cents > 0 && html`<dt>${t('orders.refunded')}</dt><dd class="num" id="order-refunded">− ${money(o.refunded_cents, o.currency)}</dd>`}
              </dl>
            </div>
            <div class="card">
              <h2>${t('orders.payments')}</h2>
              ${o.payments.length === 0
                ? html`<p class="muted">${t('orders.no_payments')}</p>`
                : html`<table class="table stacked">
                    <thead><tr>
                      <th scope="col">${t('orders.provider')}</th>
                      <th scope="col">${t('orders.status')}</th>
                      <th scope="col" class="num">${t('orders.amount')}</th>
                      <th scope="col" class="num">${t('orders.refunded')}</th>
                    </tr></thead>
                    <tbody>
                      ${o.payments.map(
                        (p) => html`<tr>
                          <td data-label=${t('orders.provider')}><div>${p.provider}<div class="muted small"><${Time} at=${p.created_at} /></div></div></td>
                          <td data-label=${t('orders.status')}><${Badge} value=${p.status} tones=${{ paid: 'ok', captured: 'ok', succeeded: 'ok', refunded: 'bad', partially_refunded: 'warn', pending: 'warn', failed: 'bad' }} /></td>
                          <td data-label=${t('orders.amount')} class="num"><${Money} cents=${p.amount_cents} currency=${o.currency} /></td>
                          <td data-label=${t('orders.refunded')} class="num"><${Money} cents=${p.refunded_cents} currency=${o.currency} /></td>
                        </tr>`,
                      )}
                    </tbody>
                  </table>`}
            </div>
          </div>
          <div>
            <div class="card">
              <h2>${t('orders.actions')}</h2>
              <${ErrorNote} error=${moveError} />
              ${moves.length === 0
                ? html`<p class="muted">${t('orders.no_actions')}</p>`
                : html`<div class="stack">
                    ${moves.map(
                      (s) => html`<button type="button" class=${`btn wide ${s === 'cancelled' ? '' : 'primary'}`}
                        data-status=${s} disabled=${moving} onClick=${() => move(s)}>${t(`orders.go.${s}`)}</button>`,
                    )}
                  </div>`}
            </div>
            <div class="card">
              <dl class="facts">
                <dt>${t('orders.customer')}</dt>
                <dd>${o.customer_id
                  ? html`<a href=${`#/customers/${o.customer_id}`}>${customer.data?.name || '…'}</a>
                      ${customer.data?.email && html`<div class="muted small">${customer.data.email}</div>`}`
                  : t('orders.no_customer')}</dd>
                <dt>${t('orders.placed')}</dt><dd><${Time} at=${o.created_at} /></dd>
                <dt>${t('orders.source')}</dt><dd>${o.source}</dd>
                ${o.note && html`<dt>${t('orders.note')}</dt><dd>${o.note}</dd>`}
              </dl>
            </div>
          </div>
        </div>
        <${RefundDialog} open=${refunding} order=${o} max=${refundable} keyRef=${refundKey}
          onClose=${() => {
            setRefunding(false);
            if (refundKey.current) order.reload();
          }}
          onDone=${(r) => {
            setRefunding(false);
            flash(t('orders.refund_done', { amount: money(r.amount_cents, o.currency), status: r.status }));
            order.reload();
          }} />`}
    <//>
  </section>`;
}

function RefundDialog({ open, order, max, keyRef, onClose, onDone }) {
  const [busy, setBusy] = useState(false);
  return html`<${Dialog} open=${open} id="refund-dialog" title=${t('orders.refund_title', { n: order.number })}
    onClose=${onClose} locked=${busy}>
    <${RefundForm} order=${order} max=${max} keyRef=${keyRef} onBusy=${setBusy} onClose=${onClose} onDone=${onDone} />
  <//>`;
}

/** Mounted each time the dialog opens: a new key per intended refund, kept on retries. */
function RefundForm({ order, max, keyRef, onBusy, onClose, onDone }) {
  const { store } = useCtx();
  const [amount, setAmount] = useState(moneyInput(max));
  const [reason, setReason] = useState('');
  const [fieldError, setFieldError] = useState(null);
  const cents = parseMoney(amount);
  const [submit, busy, error] = useAction(async () => {
    if (!cents || cents <= 0 || cents > max) {
      setFieldError(
        cents > max
          ? t('orders.refund_max', { max: money(max, order.currency) })
          : t('orders.refund_bad_amount', { example: moneyInput(1250) }),
      );
      return;
    }
    setFieldError(null);
    const body = { amount_cents: cents };
    if (reason.trim()) body.reason = reason.trim();
    keyRef.current ||= newIdempotencyKey();
    try {
      const r = await api.post(`/stores/${store.id}/orders/${order.id}/refund`, body, {
        idempotencyKey: keyRef.current,
      });
      keyRef.current = null;
      onDone(r);
    } catch (e) {
      // A 4xx is an answer (the refund was not made, or the key was spent on another
      // amount): the next try is a new request. No answer, a 5xx or "in progress" keep it.
      if (e.status >= 400 && e.status < 500 && e.code !== 'idempotency_request_in_progress') {
        keyRef.current = null;
      }
      throw e;
    }
  });
  useEffect(() => onBusy(busy), [busy]);
  useEffect(() => {
    document.getElementById('refund-amount')?.focus();
  }, []);
  return html`<form onSubmit=${formSubmit(submit)}>
    <${ErrorNote} error=${error} />
    <${Field} label=${t('orders.refund_amount')} id="refund-amount" hint=${t('orders.refund_max', { max: money(max, order.currency) })} error=${fieldError}>
      <input id="refund-amount" inputmode="decimal" required value=${amount} aria-invalid=${fieldError ? 'true' : undefined}
        aria-describedby="refund-amount-hint" onInput=${(e) => setAmount(e.target.value)} />
    <//>
    <${Field} label=${t('orders.refund_reason')} id="refund-reason">
      <textarea id="refund-reason" maxlength="500" value=${reason} onInput=${(e) => setReason(e.target.value)}></textarea>
    <//>
    <div class="dialog-actions">
      <button type="button" class="btn" onClick=${onClose}>${t('ui.cancel')}</button>
      <button type="submit" class="btn danger" disabled=${busy}>
        ${t('orders.refund_submit', { amount: cents ? money(cents, order.currency) : '' })}
      </button>
    </div>
  </form>`;
}
