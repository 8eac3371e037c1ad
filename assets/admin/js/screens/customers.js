// Customers: the list (search, keyset pages) and a customer's page: facts, addresses,
// their orders, and an edit dialog.

import { html, useState, useEffect } from '../lib.js';
import { api } from '../api.js';
import { t, words, money, date } from '../i18n.js';
import { useCtx, href, navigate } from '../app.js';
import { useResource, usePage, useAction, useFlash, ErrorNote, Dialog, Loading, Money, Time } from '../ui.js';
import { submit, Input, Head, Table } from './settings/common.js';
import { OrderStatus } from './orders.js';

// Words: key|en-US|pt-BR, each key with the `customers.` prefix.
const w = words('customers', `
title|Customers|Clientes
one|Customer|Cliente
count|{n} customers|{n} clientes
search|Search|Buscar
search_hint|Name, e-mail or phone|Nome, e-mail ou telefone
find|Find|Buscar
clear|Clear|Limpar
name|Name|Nome
contact|E-mail / phone|E-mail / telefone
orders|Orders|Pedidos
spent|Total spent|Total gasto
since|Customer since|Cliente desde
none|No customers yet.|Nenhum cliente ainda.
none_for|No customer matches “{q}”.|Nenhum cliente encontrado para “{q}”.
back|All customers|Todos os clientes
edit|Edit|Editar
edit_title|Edit customer|Editar cliente
email|E-mail
phone|Phone|Telefone
tags|Tags
tags_hint|Separate with commas.|Separe por vírgulas.
marketing|Marketing
accepts|Opted in|Aceita
declines|Not opted in|Não aceita
accepts_label|Accepts marketing e-mails|Aceita e-mails de marketing
avg|Average order|Ticket médio
addresses|Addresses|Endereços
no_addresses|No address saved.|Nenhum endereço salvo.
no_tags|No tags|Sem tags
none_given|Not given|Não informado
no_orders|No orders yet.|Nenhum pedido ainda.
in_orders|Open in Orders|Abrir em Pedidos
order|Order|Pedido
date|Date|Data
status|Status
items|Items|Itens
total|Total
save|Save|Salvar
saved|Customer saved.|Cliente salvo.
need_name|Type a name.|Digite um nome.
facts|Facts|Dados`);

const day = (iso) => html`<time datetime=${iso}>${date(iso)}</time>`;
const tags = (list) => list.map((x) => html`<span class="badge info">${x}</span> `);
const muted = (k) => html`<span class="muted">${w(k)}</span>`;

export function Customers({ parts: [id], query }) {
  return id ? html`<${CustomerPage} id=${id} />` : html`<${CustomerList} query=${query} />`;
}

function CustomerList({ query }) {
  const search = query.get('search') || '';
  const [text, setText] = useState(search);
  useEffect(() => setText(search), [search]);
  const list = usePage(`/stores/${useCtx().store.id}/customers`, { search, limit: 25, include_total: true });
  useEffect(list.prev, [search]); // a search seen before starts on page 1 again, not where usePage left it
  const { total } = list;
  const go = (q) => navigate(href('/customers', { search: q }));
  return html`<section>
    <${Head} title=${html`${w('title')}${total !== undefined &&
      html` <span class="muted small">${w('count', { n: total >= 10000 ? '10000+' : total })}</span>`}`} />
    <form class="toolbar" role="search" onSubmit=${submit(() => go(text.trim()))}>
      <div class="field grow">
        <label for="customers-search">${w('search')}</label>
        <div class="row">
          <input id="customers-search" type="search" class="grow-input" placeholder=${w('search_hint')}
            value=${text} onInput=${(e) => setText(e.target.value)} />
          <button class="btn" type="submit" id="customers-find">${w('find')}</button>
          ${search && html`<button class="btn ghost" type="button" onClick=${() => go('')}>${w('clear')}</button>`}
        </div>
      </div>
    </form>
    <${Table} id="customers-table" list=${list} none=${search ? w('none_for', { q: search }) : w('none')} attrs=${(c) => ({ 'data-id': c.id })} cols=${[
      [w('name'), (c) => html`<a href=${`#/customers/${c.id}`}>${c.name}</a>${c.tags.length > 0 && html` ${tags(c.tags)}`}`],
      [w('contact'), (c) => html`${c.email && html`<div>${c.email}</div>`}${c.phone && html`<div class="muted">${c.phone}</div>`}
        ${!c.email && !c.phone && html`<span class="muted">—</span>`}`],
      [w('orders'), (c) => c.orders_count, 'num'],
      [w('spent'), (c) => html`<${Money} cents=${c.total_spent_cents} />`, 'num'],
      [w('since'), (c) => day(c.created_at)],
    ]} />
  </section>`;
}

function addressLines(a) {
  const place = [a.postal_code, [a.city, a.region].filter(Boolean).join(' - ')].filter(Boolean).join(' ');
  return [a.name, a.line1, a.line2, place, a.country, a.phone].filter(Boolean);
}

function CustomerPage({ id }) {
  const base = `/stores/${useCtx().store.id}`;
  const customer = useResource(() => api.get(`${base}/customers/${id}`), [id]);
  const orders = usePage(`${base}/orders`, { customer_id: id, limit: 10 });
  const [flash, flashNode] = useFlash();
  const [editing, setEditing] = useState(false);
  const c = customer.data;
  const close = () => setEditing(false);
  return html`<section>
    <a class="crumb" href="#/customers">← ${w('back')}</a>
    <${Head} title=${c ? c.name : w('one')}>
      ${c &&
      html`<a class="btn" href=${href('/orders', { customer_id: c.id })}>${w('in_orders')}</a>
        <button type="button" class="btn primary" id="customer-edit" onClick=${() => setEditing(true)}>${w('edit')}</button>`}
    <//>
    <${Loading} res=${customer}>
      ${c &&
      html`${flashNode}
      <div class="grid-2">
        <div><div class="card" id="customer-orders">
          <h2>${w('orders')} <span class="muted small">(${c.orders_count})</span></h2>
          <${Table} list=${orders} none=${w('no_orders')} attrs=${(o) => ({ 'data-id': o.id })} cols=${[
            [w('order'), (o) => html`<a href=${`#/orders/${o.id}`}>#${o.number}</a>`],
            [w('date'), (o) => html`<${Time} at=${o.created_at} />`],
            [w('status'), (o) => html`<${OrderStatus} status=${o.status} />`],
            [w('items'), ({ items: i }) => (!i?.length ? '' : i.length === 1 ? `${i[0].quantity} × ${i[0].title}` : `${i[0].title} +${i.length - 1}`)],
            [w('total'), (o) => html`<${Money} cents=${o.total_cents} currency=${o.currency} />`, 'num'],
          ]} />
        </div></div>
        <div>
          <div class="card" id="customer-facts">
            <h2>${w('facts')}</h2>
            <dl class="facts">${[
              [w('email'), c.email || muted('none_given')],
              [w('phone'), c.phone || muted('none_given')],
              [w('since'), day(c.created_at)],
              [w('orders'), c.orders_count, 'num'],
              [w('spent'), html`<${Money} cents=${c.total_spent_cents} />`],
              c.orders_count > 0 && [w('avg'), money(Math.round(c.total_spent_cents / c.orders_count)), 'num'],
              [w('marketing'), c.accepts_marketing ? html`<span class="badge ok">✓ ${w('accepts')}</span>`
                : html`<span class="badge muted">✕ ${w('declines')}</span>`, , 'customer-marketing'],
              [w('tags'), c.tags.length ? tags(c.tags) : muted('no_tags'), , 'customer-tags'],
            ].filter(Boolean).map(([l, v, cls, id]) => html`<dt>${l}</dt><dd class=${cls} id=${id}>${v}</dd>`)}</dl>
          </div>
          <div class="card">
            <h2>${w('addresses')}</h2>
            ${c.addresses.length === 0
              ? html`<p class="muted">${w('no_addresses')}</p>`
              : html`<ul class="addresses">${c.addresses.map((a) =>
                  html`<li><address>${addressLines(a).map((l, i) => html`${i > 0 && html`<br />`}${l}`)}</address></li>`)}</ul>`}
          </div>
        </div>
      </div>
      <${Dialog} open=${editing} id="customer-dialog" title=${w('edit_title')} onClose=${close}>
        <${CustomerEdit} c=${c} onClose=${close} onDone=${(next) => {
          close();
          customer.setData(next);
          flash(w('saved'));
        }} />
      <//>`}
    <//>
  </section>`;
}

/** Mounted each time the dialog opens, from the customer as it is. */
function CustomerEdit({ c, onClose, onDone }) {
  const { store } = useCtx();
  const [f, setF] = useState({ ...c, email: c.email || '', phone: c.phone || '', tags: c.tags.join(', ') });
  const [nameError, setNameError] = useState(null);
  const set = (k) => (v) => setF((x) => ({ ...x, [k]: v }));
  const [save, busy, error] = useAction(async () => {
    const name = f.name.trim();
    setNameError(name ? null : w('need_name'));
    if (!name) return;
    const tags = [...new Set(f.tags.split(',').map((x) => x.trim()).filter(Boolean))];
    const body = { name, email: f.email.trim(), phone: f.phone.trim(), tags, accepts_marketing: f.accepts_marketing };
    onDone(await api.patch(`/stores/${store.id}/customers/${c.id}`, body).catch((e) => {
      // The one 409 here: the e-mail belongs to another customer of the store.
      if (e.code === 'conflict') e.code = 'email_taken';
      throw e;
    }));
  });
  useEffect(() => document.getElementById('customer-name')?.focus(), []);
  const fields = error?.details?.fields || {};
  const input = (k, id, extra) => html`<${Input} id=${id} label=${w(k)} value=${f[k]} set=${set(k)} error=${fields[k]} ...${extra} />`;
  return html`<form novalidate onSubmit=${submit(save)}>
    <${ErrorNote} error=${error} />
    ${input('name', 'customer-name', { required: true, maxlength: 255, error: nameError || fields.name })}
    ${input('email', 'customer-email', { type: 'email', maxlength: 254 })}
    ${input('phone', 'customer-phone', { type: 'tel' })}
    ${input('tags', 'customer-tags-input', { hint: w('tags_hint') })}
    <div class="field">
      <label class="check check-line" for="customer-marketing-input">
        <input id="customer-marketing-input" type="checkbox" checked=${f.accepts_marketing}
          onChange=${(e) => set('accepts_marketing')(e.target.checked)} />
        ${w('accepts_label')}
      </label>
    </div>
    <div class="dialog-actions">
      <button type="button" class="btn" onClick=${onClose}>${t('ui.cancel')}</button>
      <button type="submit" class="btn primary" id="customer-save" disabled=${busy}>${w('save')}</button>
    </div>
  </form>`;
}
