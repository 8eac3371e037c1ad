// Products: the list (filters, keyset pages, low-stock flags), the product form with its
// variants, stock per variant with the adjust dialog, delete, and the categories.

import { html, useState, useEffect, useRef } from '../lib.js';
import { api, newIdempotencyKey } from '../api.js';
import { t, words, money, parseMoney, moneyInput, getLocale } from '../i18n.js';
import { useCtx, href, navigate } from '../app.js';
import { useResource, usePage, useAction, useFlash, ErrorNote, Dialog, Loading, Time } from '../ui.js';
import { submit, Input, Select, Head, Table } from './settings/common.js';

// Words: key|en-US|pt-BR; each key gets the `products.` prefix (error codes keep theirs).
const w = words('products', `
title|Products|Produtos
tabs|Catalog|Catálogo
categories|Categories|Categorias
new|New product|Novo produto
search|Search|Buscar
search_hint|Title or SKU|Título ou SKU
find|Find|Buscar
status|Status
category|Category|Categoria
all|All|Todas
any_status|All|Todos
sort|Order|Ordem
sort.-created_at|Newest first|Mais novos primeiro
sort.title|Title A–Z|Título A–Z
sort.-updated_at|Recently changed|Alterados recentemente
st.draft|Draft|Rascunho
st.active|Active|Ativo
st.archived|Archived|Arquivado
product|Product|Produto
variants|Variants|Variantes
price|Price|Preço
stock|Stock|Estoque
rating|Rating|Nota
of5|out of 5|de 5
n_reviews|{n} reviews|{n} avaliações
none|No products match.|Nenhum produto encontrado.
count|{n} products|{n} produtos
in_stock|In stock|Em estoque
sold_out|Sold out|Esgotado
n_out|{n} sold out|{n} esgotada(s)
low_n|Low: {n} left|Baixo: restam {n}
low_title|{n} variants at or below their low-stock alert|{n} variantes no alerta de estoque baixo ou abaixo dele
low_more|Showing the first {n}.|Mostrando as primeiras {n}.
sku|SKU
available|Available|Disponível
on_hand|On hand|Em mãos
reserved|Reserved|Reservado
alert_at|Alert at|Alerta em
deleted|Product “{title}” deleted.|Produto “{title}” excluído.
back|All products|Todos os produtos
details|Details|Detalhes
f_title|Title|Título
f_description|Description|Descrição
f_slug|Store address (slug)|Endereço na loja (slug)
f_slug_hint|Lowercase letters, digits and hyphens. Empty: made from the title.|Letras minúsculas, números e hífens. Vazio: feito a partir do título.
f_tags|Tags
f_tags_hint|Separate with commas.|Separe por vírgulas.
organize|Organization|Organização
no_categories|No categories yet.|Nenhuma categoria ainda.
manage_categories|Manage categories|Gerenciar categorias
name|Name|Nome
v_title_ph|Default|Padrão
v_compare|Compare-at price|Preço “de”
v_stock|Initial stock|Estoque inicial
v_threshold|Low-stock alert|Alerta de estoque
v_n|Variant {n}|Variante {n}
v_current_n|{n} on hand|{n} em mãos
v_add|Add variant|Adicionar variante
v_remove|Remove variant {n}|Remover variante {n}
v_hint|A product has 1 to 100 variants (sizes, colors…), each with its own SKU. Stock of existing variants changes with “Adjust stock”.|Um produto tem de 1 a 100 variantes (tamanhos, cores…), cada uma com seu SKU. O estoque das variantes existentes muda em “Ajustar estoque”.
create|Create product|Criar produto
save|Save changes|Salvar alterações
saved|Product saved.|Produto salvo.
created|Product created.|Produto criado.
need_title|Give the product a title.|Dê um título ao produto.
need_sku|Type a SKU.|Digite um SKU.
dup_sku|This SKU is used twice.|Este SKU aparece duas vezes.
bad_money|Type an amount such as {example}.|Digite um valor como {example}.
bad_int|Type a whole number, 0 or more.|Digite um número inteiro, 0 ou mais.
fix|Some fields need attention.|Alguns campos precisam de atenção.
stocked_row|This variant has {n} on hand and {r} reserved: adjust its stock to zero before removing it.|Esta variante tem {n} em mãos e {r} reservadas: zere o estoque antes de removê-la.
short|Only {n} available to take off.|Só há {n} disponíveis para retirar.
adjust|Adjust stock|Ajustar estoque
adjust_of|Adjust stock of {name}|Ajustar estoque de {name}
op|Change|Alteração
op_add|Add units|Adicionar unidades
op_remove|Take units off|Retirar unidades
qty|Quantity|Quantidade
reason|Reason|Motivo
r.received|Goods received|Mercadoria recebida
r.returned|Customer return|Devolução de cliente
r.recount|Recount|Recontagem
r.damaged|Damaged|Avaria
r.lost|Lost or stolen|Perda ou furto
r.other|Other…|Outro…
reason_other|Describe the reason|Descreva o motivo
bad_qty|Type a whole number from 1 to 1,000,000.|Digite um número inteiro de 1 a 1.000.000.
after|After: {on_hand} on hand, {available} available.|Depois: {on_hand} em mãos, {available} disponíveis.
adjusted|{sku}: now {on_hand} on hand, {available} available.|{sku}: agora {on_hand} em mãos, {available} disponíveis.
low_badge|Low stock|Estoque baixo
created_at|Created|Criado em
updated_at|Changed|Alterado em
no_reviews|No reviews yet|Sem avaliações ainda
delete|Delete product|Excluir produto
delete_title|Delete “{title}”?|Excluir “{title}”?
delete_text|The product and its {n} variants leave the catalog and the store. This cannot be undone. Past orders keep their lines.|O produto e suas {n} variantes saem do catálogo e da loja. Não dá para desfazer. Pedidos antigos mantêm seus itens.
delete_yes|Delete|Excluir
cat_new|New category|Nova categoria
cat_parent|Inside|Dentro de
cat_top|None (top level)|Nenhuma (nível principal)
cat_create|Add category|Adicionar categoria
cat_created|Category “{name}” added.|Categoria “{name}” adicionada.
cat_slug|Address|Endereço
cat_see|See products|Ver produtos
cat_rename|Rename|Renomear
cat_edit_title|Edit category|Editar categoria
cat_saved|Category saved.|Categoria salva.
cat_delete_title|Delete category “{name}”?|Excluir a categoria “{name}”?
cat_delete_text|Its products lose this category (they are not deleted) and its subcategories move to the top level.|Os produtos perdem esta categoria (não são excluídos) e as subcategorias vão para o nível principal.
cat_deleted|Category “{name}” deleted.|Categoria “{name}” excluída.
cat_first|Add the first one above.|Adicione a primeira acima.
cat_save|Save|Salvar
error.products_sku_taken|A SKU is already used by another product of this store.|Um SKU já é usado por outro produto desta loja.
error.products_slug_taken|That store address (slug) is already used.|Esse endereço na loja (slug) já está em uso.
error.products_variant_stocked|A removed variant still has stock on hand or reserved. Adjust it to zero first.|Uma variante removida ainda tem estoque em mãos ou reservado. Zere o estoque antes.`);

const STATUSES = ['draft', 'active', 'archived'];
const badge = (tone, label) => html`<span class=${`badge ${tone}`}>${label}</span>`;
const status = (s) => badge({ draft: 'warn', active: 'ok' }[s] || 'muted', STATUSES.includes(s) ? w(`st.${s}`) : s);
const dash = () => html`<span class="muted">—</span>`;
const useBase = () => `/stores/${useCtx().store.id}`;
const focus = (id, how = 'focus') => document.getElementById(id)?.[how]();
const crumb = () => html`<a class="crumb" href="#/products">← ${w('back')}</a>`;

export function Products({ parts: [id], query }) {
  const Screen = id === 'new' ? ProductNew : id === 'categories' ? Categories : id ? ProductPage : ProductList;
  return html`<${Screen} id=${id} query=${query} />`;
}

// Every category (pages of 200, ten at most) for the filter, the checkboxes and the tree.
function useCats() {
  const base = useBase();
  return useResource(async () => {
    const out = [];
    let cursor;
    let i = 0;
    do {
      const p = await api.get(`${base}/categories`, { limit: 200, cursor });
      out.push(...p.data);
      cursor = p.has_more && p.next_cursor;
    } while (cursor && ++i < 10);
    return out;
  }, [base]);
}

function tree(cats) {
  const ids = new Set(cats.map((c) => c.id));
  const out = [];
  const walk = (pid, depth) => cats.forEach((c) => {
    if ((ids.has(c.parent_id) ? c.parent_id : null) !== pid) return;
    out.push({ ...c, depth });
    walk(c.id, depth + 1);
  });
  walk(null, 0);
  return out;
}

const options = (cats, first) => [['', first], ...cats.map((c) => [c.id, `${'— '.repeat(c.depth)}${c.name}`])];
const depthClass = (c) => `depth-${Math.min(c.depth, 3)}`;

const Tabs = ({ at }) => html`<nav class="tabs" aria-label=${w('tabs')}>
  ${[['products', '', 'title'], ['categories', '/categories', 'categories']].map(([k, p, l]) =>
    html`<a href=${`#/products${p}`} id=${`tab-${k}`} aria-current=${at === k ? 'page' : undefined}>${w(l)}</a>`)}
</nav>`;

// Product writes share one 409 `conflict`: tell the merchant which one it was.
function rethrow(e) {
  if (e.code === 'conflict') {
    e.code = e.details?.variant_ids ? 'products_variant_stocked'
      : /sku/i.test(e.message) ? 'products_sku_taken' : /slug/i.test(e.message) ? 'products_slug_taken' : e.code;
  }
  throw e;
}

// A retry of the same body keeps its Idempotency-Key, so it is not applied twice.
function usePost() {
  const last = useRef({});
  return (path, body) => {
    const s = JSON.stringify(body);
    if (last.current.s !== s) last.current = { s, key: newIdempotencyKey() };
    return api.post(path, body, { idempotencyKey: last.current.key });
  };
}

const Acts = ({ onClose, id, label, busy, onClick }) => html`<div class="dialog-actions">
  <button type="button" class="btn" onClick=${onClose}>${t('ui.cancel')}</button>
  <button type=${onClick ? 'button' : 'submit'} class=${`btn ${onClick ? 'danger' : 'primary'}`} id=${id} disabled=${busy}
    onClick=${onClick}>${label}</button>
</div>`;

function Confirm({ text, id, run, onClose }) {
  const [go, busy, error] = useAction(run);
  return html`<p>${text}</p><${ErrorNote} error=${error} />
    <${Acts} onClose=${onClose} id=${id} label=${w('delete_yes')} busy=${busy} onClick=${() => go()} />`;
}

function priceRange(vs) {
  const ps = vs.map((v) => v.price_cents);
  const [lo, hi] = [Math.min(...ps), Math.max(...ps)];
  return lo === hi ? money(lo) : `${money(lo)} – ${money(hi)}`;
}

function rating(p) {
  if (!p.rating_count) return dash();
  const avg = new Intl.NumberFormat(getLocale(), { maximumFractionDigits: 1 }).format(p.rating_average);
  return html`<span class="num">${avg}<span aria-hidden="true"> ★</span><span class="sr-only"> ${w('of5')}</span>
    <span class="muted small"> (<span class="sr-only">${w('n_reviews', { n: p.rating_count })}</span><span aria-hidden="true">${p.rating_count}</span>)</span></span>`;
}

function stockFlag(p, items, complete) {
  if (!items.length) return complete ? badge('ok', w('in_stock')) : dash();
  const out = items.filter((i) => i.available <= 0).length;
  if (out) return badge('bad', out >= p.variants.length ? w('sold_out') : w('n_out', { n: out }));
  return badge('warn', w('low_n', { n: Math.min(...items.map((i) => i.available)) }));
}

function ProductList({ query }) {
  const base = useBase();
  const f = {};
  for (const k of ['search', 'status', 'category_id', 'sort']) f[k] = query.get(k) || '';
  const deleted = query.get('deleted');
  const [text, setText] = useState(f.search);
  useEffect(() => setText(f.search), [f.search]);
  const cats = useCats();
  const low = useResource(() => api.get(`${base}/inventory`, { low_stock: true, limit: 200 }), [base]);
  const list = usePage(`${base}/products`, { ...f, limit: 25, include_total: true });
  // usePage would resume a filter's old page when it comes back: start every filter on page 1.
  useEffect(list.prev, [JSON.stringify(f)]);
  const { rows, total } = list;
  const filter = (k) => (v) => navigate(href('/products', { ...f, [k]: v }));
  const lows = low.data?.data || [];
  const more = low.data?.has_more;
  const catName = new Map((cats.data || []).map((c) => [c.id, c.name]));
  const title = (id) => rows.find((p) => p.id === id)?.title;
  return html`<section>
    <${Head} title=${html`${w('title')}${total !== undefined &&
      html` <span class="muted small">${w('count', { n: total >= 10000 ? '10000+' : total })}</span>`}`}>
      <a class="btn primary" id="products-new" href="#/products/new">+ ${w('new')}</a>
    <//>
    <${Tabs} at="products" />
    ${deleted && html`<p class="note ok" role="status">${w('deleted', { title: deleted })}</p>`}
    <div class="toolbar">
      <form class="field grow" role="search" onSubmit=${submit(() => filter('search')(text.trim()))}>
        <label for="products-search">${w('search')}</label>
        <div class="row">
          <input id="products-search" type="search" class="grow-input" placeholder=${w('search_hint')}
            value=${text} onInput=${(e) => setText(e.target.value)} />
          <button class="btn" type="submit" id="products-find">${w('find')}</button>
        </div>
      </form>
      <${Select} id="products-status" label=${w('status')} value=${f.status} set=${filter('status')}
        options=${[['', w('any_status')], ...STATUSES.map((s) => [s, w(`st.${s}`)])]} />
      <${Select} id="products-category" label=${w('category')} value=${f.category_id} set=${filter('category_id')}
        options=${options(tree(cats.data || []), w('all'))} />
      <${Select} id="products-sort" label=${w('sort')} value=${f.sort || '-created_at'} set=${filter('sort')}
        options=${['-created_at', 'title', '-updated_at'].map((s) => [s, w(`sort.${s}`)])} />
    </div>
    <${ErrorNote} error=${cats.error} onRetry=${cats.reload} />
    <${ErrorNote} error=${low.error} onRetry=${low.reload} />
    ${lows.length > 0 &&
    html`<details class="card low-panel" id="products-low">
      <summary>${w('low_title', { n: more ? `${lows.length}+` : lows.length })}</summary>
      ${more && html`<p class="muted small">${w('low_more', { n: lows.length })}</p>`}
      <${Table} list=${{ rows: lows }} attrs=${() => ({})} cols=${[
        [w('sku'), (i) => html`<a href=${`#/products/${i.product_id}`} class="mono">${i.sku}</a>
          ${title(i.product_id) && html`<span class="muted small"> · ${title(i.product_id)}</span>`}`],
        ...[['available', 'available'], ['on_hand', 'on_hand'], ['alert_at', 'low_stock_threshold']].map(([k, x]) => [w(k), (i) => i[x], 'num']),
      ]} />
    </details>`}
    <${Table} id="products-table" list=${list} none=${w('none')} attrs=${(p) => ({ 'data-id': p.id })} cols=${[
      [w('product'), (p) => html`<a href=${`#/products/${p.id}`}>${p.title}</a>
        ${p.category_ids.length > 0 &&
        html`<div class="muted small">${p.category_ids.map((c) => catName.get(c)).filter(Boolean).join(', ')}</div>`}`],
      [w('status'), (p) => status(p.status)],
      [w('variants'), (p) => p.variants.length, 'num'],
      [w('price'), (p) => priceRange(p.variants), 'num'],
      [w('stock'), (p) => stockFlag(p, lows.filter((i) => i.product_id === p.id), low.data && !more)],
      [w('rating'), rating],
    ]} />
  </section>`;
}

let rowSeq = 0;
const variantRow = (v = {}, l) => ({
  k: ++rowSeq, id: v.id, title: v.title || '', sku: v.sku || '', price: v.id ? moneyInput(v.price_cents) : '',
  compare: v.compare_at_price_cents != null ? moneyInput(v.compare_at_price_cents) : '', on_hand: '',
  threshold: l ? String(l.low_stock_threshold) : '', weight_grams: v.weight_grams ?? null,
});

/** The request body from the form, and the field errors found on the way (keyed as the API's). */
function toBody(s) {
  const errs = {};
  const slug = s.slug.trim();
  const tags = [...new Set(s.tags.split(',').map((x) => x.trim()).filter(Boolean))];
  const body = { title: s.title.trim(), description: s.description, status: s.status, category_ids: s.category_ids, tags };
  if (!body.title) errs.title = w('need_title');
  if (slug) body.slug = slug;
  if (slug && !/^[a-z0-9]+(-[a-z0-9]+)*$/.test(slug)) errs.slug = w('f_slug_hint');
  const skus = new Set();
  body.variants = s.variants.map((v, i) => {
    const bad = (f, k) => (errs[`variants[${i}].${f}`] = w(k, { example: moneyInput(4990) }));
    const [sku, title, compare] = [v.sku.trim(), v.title.trim(), v.compare.trim()];
    const out = { sku, price_cents: parseMoney(v.price), compare_at_price_cents: compare ? parseMoney(compare) : null };
    if (v.id) out.id = v.id;
    if (title) out.title = title;
    if (v.weight_grams != null) out.weight_grams = v.weight_grams;
    if (!sku || skus.has(sku)) bad('sku', sku ? 'dup_sku' : 'need_sku');
    skus.add(sku);
    if (out.price_cents === null) bad('price_cents', 'bad_money');
    if (compare && out.compare_at_price_cents === null) bad('compare_at_price_cents', 'bad_money');
    const whole = (f, key, x = v[f].trim()) => x && (/^\d+$/.test(x) ? (out[key] = Number(x)) : bad(key, 'bad_int'));
    whole('threshold', 'low_stock_threshold');
    if (!v.id) whole('on_hand', 'on_hand');
    return out;
  });
  return { body, errs };
}

function ProductForm({ product: p = {}, levels, cats, onSave, label, saved }) {
  const [init] = useState(() => ({
    title: '', description: '', status: 'active', slug: '', category_ids: [], ...p,
    tags: (p.tags || []).join(', '),
    variants: p.id ? p.variants.map((v) => variantRow(v, levels.get(v.id))) : [variantRow()],
  }));
  const [s, setS] = useState(init);
  const [errs, setErrs] = useState({});
  const [fix, setFix] = useState(false);
  const set = (k) => (v) => setS((x) => ({ ...x, [k]: typeof v === 'function' ? v(x[k]) : v }));
  const setVariants = set('variants');
  const ids = s.category_ids;
  const [save, busy, error] = useAction(async () => {
    const { body, errs: found } = toBody(s);
    const bad = Object.keys(found).length;
    setErrs(found);
    setFix(bad > 0);
    if (bad) return document.querySelector('[aria-invalid="true"]')?.focus();
    await onSave(body).catch((e) => {
      if (e.details?.fields) setErrs(e.details.fields);
      rethrow(e);
    });
  });
  // A variant holding stock cannot be removed (409): say so on its row instead.
  const remove = (v, i) => {
    const l = v.id && levels.get(v.id);
    if (l && (l.on_hand > 0 || l.reserved > 0)) return setErrs({ [`variants[${i}].remove`]: w('stocked_row', { n: l.on_hand, r: l.reserved }) });
    setErrs({});
    setVariants((vs) => vs.filter((y) => y.k !== v.k));
  };
  const input = (k, extra) => html`<${Input} id=${`product-${k}`} label=${w(`f_${k}`)} value=${s[k]} set=${set(k)} error=${errs[k]} ...${extra} />`;
  const catTree = tree(cats.data || []);
  const n = s.variants.length;
  return html`<form id="product-form" novalidate onSubmit=${submit(save)}>
    <div class="grid-2">
      <div><div class="card">
        <h2>${w('details')}</h2>
        ${input('title', { required: true, maxlength: 255 })}
        ${input('description', { rows: 5 })}
      </div></div>
      <div><div class="card">
        <h2>${w('organize')}</h2>
        <${Select} id="product-status" label=${w('status')} value=${s.status} set=${set('status')} options=${STATUSES.map((x) => [x, w(`st.${x}`)])} />
        <fieldset class="field checks" id="product-categories">
          <legend class="label">${w('categories')}</legend>
          <${ErrorNote} error=${cats.error} onRetry=${cats.reload} />
          ${cats.data && !catTree.length && html`<p class="muted small">${w('no_categories')}</p>`}
          ${catTree.map((c) => html`<label class=${`check ${depthClass(c)}`}><input type="checkbox" value=${c.id} checked=${ids.includes(c.id)}
            onChange=${() => set('category_ids')((a) => (a.includes(c.id) ? a.filter((x) => x !== c.id) : [...a, c.id]))} />${c.name}</label>`)}
          ${errs.category_ids && html`<p class="field-error">${errs.category_ids}</p>`}
          <a class="small" href="#/products/categories">${w('manage_categories')}</a>
        </fieldset>
        ${input('tags', { hint: w('f_tags_hint') })}
        ${input('slug', { hint: w('f_slug_hint'), class: 'mono', maxlength: 120 })}
      </div></div>
    </div>
    <fieldset class="card variants" id="product-variants">
      <legend><h2>${w('variants')}</h2></legend>
      <p class="muted small">${w('v_hint')}</p>
      ${s.variants.map((v, i) => {
        const l = v.id && levels.get(v.id);
        const num = { type: 'number', min: 0, step: 1, inputmode: 'numeric' };
        const field = (f, key, label, extra) => html`<${Input} id=${`variant-${i}-${f}`} label=${label} value=${v[f]}
          error=${errs[`variants[${i}].${key}`]} set=${(x) => setVariants((vs) => vs.map((y) => (y.k === v.k ? { ...y, [f]: x } : y)))}
          ...${extra} />`;
        const removeError = errs[`variants[${i}].remove`];
        const rm = w('v_remove', { n: i + 1 });
        return html`<fieldset class="variant-row" key=${v.k} data-variant-id=${v.id || ''}>
          <legend class="sr-only">${w('v_n', { n: i + 1 })}</legend>
          ${field('title', 'title', w('name'), { maxlength: 255, placeholder: w('v_title_ph') })}
          ${field('sku', 'sku', w('sku'), { maxlength: 64, required: true, class: 'mono' })}
          ${field('price', 'price_cents', w('price'), { inputmode: 'decimal', required: true })}
          ${field('compare', 'compare_at_price_cents', w('v_compare'), { inputmode: 'decimal' })}
          ${v.id
            ? html`<div class="field"><span class="label">${w('in_stock')}</span>
                <p class="static num">${l ? w('v_current_n', { n: l.on_hand }) : '—'}</p></div>`
            : field('on_hand', 'on_hand', w('v_stock'), { ...num, placeholder: '0' })}
          ${field('threshold', 'low_stock_threshold', w('v_threshold'), { ...num, placeholder: '5' })}
          <div class="variant-remove-cell">
            <button type="button" class="btn ghost icon variant-remove" aria-label=${rm} title=${rm} disabled=${n <= 1}
              onClick=${() => remove(v, i)}>✕</button>
          </div>
          ${removeError && html`<p class="field-error variant-remove-error" role="alert">${removeError}</p>`}
        </fieldset>`;
      })}
      <button type="button" class="btn" id="variant-add" disabled=${n >= 100} onClick=${() => {
        setVariants((vs) => [...vs, variantRow()]);
        setTimeout(() => focus(`variant-${n}-title`), 0);
      }}>+ ${w('v_add')}</button>
    </fieldset>
    <div class="form-bar">
      ${fix && html`<p class="note warn" role="alert">${w('fix')}</p>`}
      <${ErrorNote} error=${error} />
      <div class="row">
        <button type="submit" class="btn primary" id="product-save" disabled=${busy}>${label}</button>
        ${saved && s === init && html`<span class="ok-text" id="product-saved">✓ ${saved}</span>`}
      </div>
    </div>
  </form>`;
}

function ProductNew() {
  const base = useBase();
  const cats = useCats();
  const post = usePost();
  const save = async (body) => navigate(href(`/products/${(await post(`${base}/products`, body)).id}`, { created: '1' }));
  return html`<section>${crumb()}<${Head} title=${w('new')} />
    <${ProductForm} levels=${new Map()} cats=${cats} onSave=${save} label=${w('create')} />
  </section>`;
}

function ProductPage({ id, query }) {
  const base = useBase();
  const product = useResource(() => api.get(`${base}/products/${id}`), [id]);
  const getInv = () => api.get(`${base}/inventory`, { product_id: id, limit: 200 });
  const inv = useResource(getInv, [id]);
  const cats = useCats();
  const [flash, flashNode] = useFlash();
  const [saves, setSaves] = useState(0);
  const [adjusting, setAdjusting] = useState(null);
  const [deleting, setDeleting] = useState(false);
  useEffect(() => void (query.get('created') && flash(w('created'))), []);
  const p = product.data;
  const levels = new Map((inv.data?.data || []).map((l) => [l.variant_id, l]));
  const save = async (body) => {
    const next = await api.patch(`${base}/products/${id}`, body);
    await getInv().then(inv.setData, inv.reload);
    product.setData(next);
    setSaves((n) => n + 1);
    flash(w('saved'));
  };
  const closeAdjust = () => setAdjusting(null);
  const closeDelete = () => setDeleting(false);
  const cell = (k) => (v) => levels.get(v.id)?.[k] ?? '—';
  const adjusted = ({ variant_id, on_hand, reserved, available, low_stock_threshold }) => {
    closeAdjust();
    inv.setData((d) => d && { ...d, data: d.data.map((l) => (l.variant_id === variant_id ? { ...l, on_hand, reserved, available, low_stock_threshold } : l)) });
    flash(w('adjusted', { sku: adjusting.sku, on_hand, available }));
  };
  return html`<section>
    ${crumb()}
    <${Head} title=${p ? html`${p.title} ${status(p.status)}` : w('product')} />
    <${Loading} res=${product}>
      ${p &&
      html`${flashNode}
      <div class="card stock-card" id="product-stock">
        <h2>${w('stock')}</h2>
        <${ErrorNote} error=${inv.error} onRetry=${inv.reload} />
        <${Table} list=${{ rows: p.variants }} attrs=${(v) => ({ 'data-variant-id': v.id })} cols=${[
          [w('name'), (v) => v.title],
          [w('sku'), (v) => html`<span class="mono">${v.sku}</span>`],
          [w('on_hand'), cell('on_hand'), 'num stock-on-hand'],
          [w('reserved'), cell('reserved'), 'num'],
          [w('available'), (v) => {
            const l = levels.get(v.id);
            const out = l && l.available <= 0;
            return html`${l && l.available <= l.low_stock_threshold && html`${badge(out ? 'bad' : 'warn', w(out ? 'sold_out' : 'low_badge'))} `}
              <strong>${cell('available')(v)}</strong>`;
          }, 'num stock-available'],
          ['', (v) => html`<button type="button" class="btn adjust-stock" data-variant-id=${v.id} disabled=${!levels.get(v.id)}
            aria-label=${w('adjust_of', { name: `${v.title} (${v.sku})` })} onClick=${() => setAdjusting(v)}>${w('adjust')}</button>`, 'right'],
        ]} />
      </div>
      ${inv.data || inv.error
        ? html`<${ProductForm} key=${saves} product=${p} levels=${levels} cats=${cats} onSave=${save}
            label=${w('save')} saved=${saves > 0 && w('saved')} />`
        : html`<p class="muted" role="status">${t('ui.loading')}</p>`}
      <div class="row page-foot">
        <p class="muted small">
          ${w('created_at')} <${Time} at=${p.created_at} /> · ${w('updated_at')} <${Time} at=${p.updated_at} />${' · '}
          ${p.rating_count ? html`${w('rating')}: ${rating(p)}` : w('no_reviews')}
        </p>
        <button type="button" class="btn danger" id="product-delete" onClick=${() => setDeleting(true)}>${w('delete')}</button>
      </div>
      <${Dialog} open=${Boolean(adjusting)} id="adjust-dialog" title=${w('adjust')} onClose=${closeAdjust}>
        ${adjusting && html`<${AdjustForm} v=${adjusting} level=${levels.get(adjusting.id)} onClose=${closeAdjust} onDone=${adjusted} />`}
      <//>
      <${Dialog} open=${deleting} id="delete-dialog" title=${w('delete_title', { title: p.title })} onClose=${closeDelete}>
        <${Confirm} id="product-delete-confirm" text=${w('delete_text', { n: p.variants.length })} onClose=${closeDelete}
          run=${async () => {
            await api.del(`${base}/products/${p.id}`);
            navigate(href('/products', { deleted: p.title }));
          }} />
      <//>`}
    <//>
  </section>`;
}

// Mounted each time the dialog opens: +/- units with a reason.
function AdjustForm({ v, level: l, onClose, onDone }) {
  const base = useBase();
  const post = usePost();
  const [{ dir, qty, reason, other }, setF] = useState({ dir: 'add', qty: '', reason: 'received', other: '' });
  const set = (k) => (v) => setF((x) => ({ ...x, [k]: v }));
  const [fe, setFe] = useState({});
  const n = /^\d+$/.test(qty.trim()) ? Number(qty) : null;
  const delta = n ? (dir === 'add' ? n : -n) : null;
  const [run, busy, error] = useAction(async () => {
    const why = reason === 'other' ? other.trim() : reason;
    const errs = {
      qty: !n || n > 1000000 ? w('bad_qty')
        : dir === 'remove' && l && n > l.available ? w('short', { n: Math.max(0, l.available) }) : null,
      other: why ? null : `${w('reason_other')}.`,
    };
    setFe(errs);
    if (!errs.qty && !errs.other) onDone(await post(`${base}/inventory/${v.id}/adjustments`, { delta, reason: why }));
  });
  useEffect(() => focus('adjust-qty'), []);
  const pickDir = (d) => {
    const [from, to] = d === 'add' ? ['damaged', 'received'] : ['received', 'damaged'];
    setF((x) => ({ ...x, dir: d, reason: reason === from ? to : reason }));
  };
  return html`<form novalidate onSubmit=${submit(run)}>
    <p><strong>${v.title}</strong> · <span class="mono">${v.sku}</span></p>
    ${l && html`<dl class="facts">${['on_hand', 'reserved', 'available'].map((k) => html`<dt>${w(k)}</dt><dd class="num">${l[k]}</dd>`)}</dl>`}
    <${ErrorNote} error=${error} />
    <fieldset class="field">
      <legend class="label">${w('op')}</legend>
      <div class="row">${['add', 'remove'].map((d) => html`<label class="check">
        <input type="radio" name="adjust-dir" id=${`adjust-${d}`} checked=${dir === d} onChange=${() => pickDir(d)} /> ${w(`op_${d}`)}</label>`)}
      </div>
    </fieldset>
    <${Input} id="adjust-qty" label=${w('qty')} value=${qty} set=${set('qty')} error=${fe.qty}
      hint=${l && delta ? w('after', { on_hand: l.on_hand + delta, available: l.available + delta }) : null}
      type="number" min="1" max="1000000" step="1" inputmode="numeric" required />
    <${Select} id="adjust-reason" label=${w('reason')} value=${reason} set=${set('reason')} options=${['received', 'returned', 'recount', 'damaged', 'lost', 'other'].map((r) => [r, w(`r.${r}`)])} />
    ${reason === 'other' &&
    html`<${Input} id="adjust-other" label=${w('reason_other')} value=${other} set=${set('other')} error=${fe.other} maxlength="255" />`}
    <${Acts} onClose=${onClose} id="adjust-submit" label=${w('adjust')} busy=${busy} />
  </form>`;
}

/** The parent choices for a category: the tree without it and what is inside it. */
function parentChoices(all, self) {
  const rows = tree(all);
  const i = rows.findIndex((c) => c.id === self.id);
  let j = i + 1;
  while (i >= 0 && rows[j]?.depth > rows[i].depth) j++;
  return i < 0 ? rows : [...rows.slice(0, i), ...rows.slice(j)];
}

function Categories() {
  const path = `${useBase()}/categories`;
  const cats = useCats();
  const [flash, flashNode] = useFlash();
  const [editing, setEditing] = useState(null);
  const [deleting, setDeleting] = useState(null);
  const [name, setName] = useState('');
  const [parent, setParent] = useState('');
  const post = usePost();
  const rows = tree(cats.data || []);
  const closeEdit = () => setEditing(null);
  const closeDelete = () => setDeleting(null);
  const done = (msg) => {
    closeEdit();
    closeDelete();
    flash(msg);
    cats.reload();
  };
  const [create, busy, error] = useAction(async () => {
    const c = await post(path, parent ? { name: name.trim(), parent_id: parent } : { name: name.trim() }).catch(rethrow);
    setName('');
    done(w('cat_created', { name: c.name }));
    focus('category-name');
  });
  const act = (cls, label, c, fn) => html`<button type="button" class=${`btn ${cls}`} aria-label=${`${label} ${c.name}`}
    onClick=${() => fn(c)}>${label}</button>`;
  return html`<section>
    <${Head} title=${w('categories')}><a class="btn" href="#/products/new">+ ${w('new')}</a><//>
    <${Tabs} at="categories" />
    ${flashNode}
    <form class="card toolbar" id="category-form" onSubmit=${submit(() => name.trim() && create())}>
      <div class="field grow">
        <label for="category-name">${w('cat_new')}</label>
        <input id="category-name" required maxlength="120" value=${name} onInput=${(e) => setName(e.target.value)} />
      </div>
      <${Select} id="category-parent" label=${w('cat_parent')} value=${parent} set=${setParent} options=${options(rows, w('cat_top'))} />
      <button type="submit" class="btn primary" id="category-create" disabled=${busy || !name.trim()}>${w('cat_create')}</button>
    </form>
    <${ErrorNote} error=${error} />
    <${Table} id="categories-table" list=${{ ...cats, rows }} none=${`${w('no_categories')} ${w('cat_first')}`} attrs=${(c) => ({ 'data-id': c.id })} cols=${[
      [w('name'), (c) => html`<span class=${`cat-name ${depthClass(c)}`}>${c.depth > 0 && html`<span aria-hidden="true">↳ </span>`}${c.name}</span>`],
      [w('cat_slug'), (c) => html`<span class="mono small">${c.slug}</span>`],
      [w('title'), (c) => html`<a href=${href('/products', { category_id: c.id })}>${w('cat_see')}</a>`],
      ['', (c) => html`<div class="row end">${act('cat-rename', w('cat_rename'), c, setEditing)}${act('cat-delete', w('delete_yes'), c, setDeleting)}</div>`, 'right'],
    ]} />
    <${Dialog} open=${Boolean(editing)} id="category-dialog" title=${w('cat_edit_title')} onClose=${closeEdit}>
      ${editing &&
      html`<${CategoryEdit} c=${editing} path=${`${path}/${editing.id}`} onClose=${closeEdit} onDone=${() => done(w('cat_saved'))}
        options=${options(parentChoices(cats.data || [], editing), w('cat_top'))} />`}
    <//>
    <${Dialog} open=${Boolean(deleting)} id="category-delete-dialog" title=${deleting ? w('cat_delete_title', { name: deleting.name }) : ''}
      onClose=${closeDelete}>
      ${deleting &&
      html`<${Confirm} id="category-delete-confirm" text=${w('cat_delete_text')} onClose=${closeDelete} run=${async () => {
        await api.del(`${path}/${deleting.id}`);
        done(w('cat_deleted', { name: deleting.name }));
      }} />`}
    <//>
  </section>`;
}

function CategoryEdit({ c, path, options, onClose, onDone }) {
  const [name, setName] = useState(c.name);
  const [parent, setParent] = useState(c.parent_id || '');
  const [save, busy, error] = useAction(async () => {
    await api.patch(path, { name: name.trim(), parent_id: parent || null }).catch(rethrow);
    onDone();
  });
  useEffect(() => focus('category-edit-name', 'select'), []);
  return html`<form onSubmit=${submit(() => name.trim() && save())}>
    <${ErrorNote} error=${error} />
    <${Input} id="category-edit-name" label=${w('name')} value=${name} set=${setName} required maxlength="120" />
    <${Select} id="category-edit-parent" label=${w('cat_parent')} value=${parent} set=${setParent} options=${options} />
    <${Acts} onClose=${onClose} id="category-save" label=${w('cat_save')} busy=${busy || !name.trim()} />
  </form>`;
}
