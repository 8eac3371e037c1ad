// Home: today's orders and revenue, 30 days of revenue, pending reviews, open conversations,
// low-stock variants and the onboarding checklist, each linking to its screen.

import { html } from '../lib.js';
import { api } from '../api.js';
import { t, has, words, money, date } from '../i18n.js';
import { useCtx } from '../app.js';
import { useResource, ErrorNote } from '../ui.js';

words('home', `
title|Today at {store}|Hoje na {store}
orders_today|Orders today|Pedidos hoje
revenue_today|Revenue today|Faturamento hoje
pending_reviews|Reviews to moderate|Avaliações para moderar
open_conversations|Open conversations|Conversas abertas
last_30|Last 30 days|Últimos 30 dias
last_30_summary|{orders} orders, {revenue} in revenue, {refunds} refunded.|{orders} pedidos, {revenue} de faturamento, {refunds} reembolsados.
chart_label|Revenue per day over the last 30 days|Faturamento por dia nos últimos 30 dias
low_stock|Low stock|Estoque baixo
low_stock_none|No variant is below its threshold.|Nenhuma variante abaixo do limite.
low_stock_more|and {n} more|e mais {n}
available|{n} available (alert at {min})|{n} disponíveis (alerta em {min})
checklist|Getting started|Primeiros passos
checklist_progress|{done} of {total} done|{done} de {total} feitos
`);
words('onboarding', `
products|Add a product with stock|Cadastre um produto com estoque
payments|Choose the payment methods you accept|Escolha os meios de pagamento aceitos
freight|Set up your shipping zones|Configure as zonas de frete
brand|Set up your brand|Configure sua marca
messaging_app|Connect your messaging app|Conecte o aplicativo de mensagens
team|Invite your team|Convide sua equipe
custom_domain|Connect your own domain|Conecte seu próprio domínio
first_order|Get your first paid order|Receba o primeiro pedido pago
`);

// Where each checklist step is done in this app.
const STEP_ROUTES = {
  products: '#/products/new',
  payments: '#/settings/store',
  freight: '#/settings/store',
  messaging_app: '#/settings/channels',
  team: '#/settings/team',
  custom_domain: '#/settings/store',
  first_order: '#/orders',
};

export function Home() {
  const { store } = useCtx();
  const base = `/stores/${store.id}`;
  const summary = useResource(() => api.get(`${base}/analytics/summary`), [store.id]);
  const reviews = useResource(
    () => api.get(`${base}/reviews`, { status: 'pending', limit: 1, include_total: true }),
    [store.id],
  );
  const counts = useResource(() => api.get(`${base}/conversations/counts`), [store.id]);
  const low = useResource(
    () => api.get(`${base}/inventory`, { low_stock: true, limit: 6, include_total: true }),
    [store.id],
  );
  const onboarding = useResource(() => api.get(`${base}/onboarding`), [store.id]);
  const s = summary.data;
  const today = s?.series?.[s.series.length - 1];
  return html`<section>
    <div class="page-head"><h1 tabindex="-1">${t('home.title', { store: store.name })}</h1></div>
    <div class="grid stats">
      <${Stat} label=${t('home.orders_today')} res=${summary} href="#/orders" value=${today ? today.orders : '—'} id="stat-orders" />
      <${Stat} label=${t('home.revenue_today')} res=${summary} href="#/orders"
        value=${today ? money(today.revenue_cents, s.currency) : '—'} id="stat-revenue" />
      <${Stat} label=${t('home.pending_reviews')} res=${reviews} href="#/reviews"
        value=${reviews.data ? reviews.data.total : '—'} id="stat-reviews" />
      <${Stat} label=${t('home.open_conversations')} res=${counts} href="#/inbox"
        value=${counts.data ? counts.data.open : '—'} id="stat-conversations" />
    </div>
    <div class="grid-2">
      <div>
        <div class="card">
          <h2>${t('home.last_30')}</h2>
          <${ErrorNote} error=${summary.error} onRetry=${summary.reload} />
          ${s &&
          html`<p class="muted">${t('home.last_30_summary', {
              orders: s.totals.orders,
              revenue: money(s.totals.revenue_cents, s.currency),
              refunds: money(s.totals.refunds_cents, s.currency),
            })}</p>
            <${Bars} series=${s.series} currency=${s.currency} />`}
        </div>
        <div class="card">
          <h2>${t('home.low_stock')}</h2>
          <${ErrorNote} error=${low.error} onRetry=${low.reload} />
          ${low.data &&
          (low.data.data.length === 0
            ? html`<p class="muted">${t('home.low_stock_none')}</p>`
            : html`<ul class="plain-list">
                ${low.data.data.map(
                  (v) => html`<li><a href=${`#/products/${v.product_id}`} class="mono">${v.sku}</a>
                    <span class=${v.available <= 0 ? 'badge bad' : 'badge warn'}>${t('home.available', { n: v.available, min: v.low_stock_threshold })}</span></li>`,
                )}
                ${low.data.total > low.data.data.length &&
                html`<li class="muted">${t('home.low_stock_more', { n: low.data.total - low.data.data.length })}</li>`}
              </ul>`)}
        </div>
      </div>
      <div class="card">
        <h2>${t('home.checklist')}</h2>
        <${ErrorNote} error=${onboarding.error} onRetry=${onboarding.reload} />
        ${onboarding.data &&
        html`<p class="muted">${t('home.checklist_progress', { done: onboarding.data.completed, total: onboarding.data.total })}</p>
          <progress max=${onboarding.data.total} value=${onboarding.data.completed} aria-label=${t('home.checklist')}></progress>
          <ul class="checklist">
            ${onboarding.data.steps.map(
              (step) => html`<li class=${step.done ? 'done' : ''}>
                <span class="tick" aria-hidden="true">${step.done ? '✓' : '○'}</span>
                <span class="sr-only">${step.done ? '✓' : ''}</span>
                ${STEP_ROUTES[step.key] && !step.done
                  ? html`<a href=${STEP_ROUTES[step.key]}>${stepTitle(step)}</a>`
                  : html`<span>${stepTitle(step)}</span>`}
              </li>`,
            )}
          </ul>`}
      </div>
    </div>
  </section>`;
}

function stepTitle(step) {
  const key = `onboarding.${step.key}`;
  return has(key) ? t(key) : step.title;
}

function Stat({ label, value, res, href, id }) {
  return html`<a class="card stat-card" href=${href} id=${id}>
    <p class="stat"><span class="label">${label}</span>
      <span class="value">${res.error ? '!' : value}</span></p>
  </a>`;
}

/** Revenue per day as bars; the numbers are in the title of each bar and in the table. */
function Bars({ series, currency }) {
  const max = Math.max(1, ...series.map((d) => d.revenue_cents));
  const w = 600;
  const h = 120;
  const bw = w / series.length;
  return html`<figure class="bars">
    <svg viewBox=${`0 0 ${w} ${h}`} role="img" aria-label=${t('home.chart_label')} preserveAspectRatio="none">
      ${series.map((d, i) => {
        const bh = Math.max(1, (d.revenue_cents / max) * (h - 4));
        return html`<rect x=${i * bw + 1} y=${h - bh} width=${Math.max(1, bw - 2)} height=${bh} rx="2">
          <title>${date(`${d.start}T12:00:00Z`)}: ${money(d.revenue_cents, currency)} (${d.orders})</title>
        </rect>`;
      })}
    </svg>
    <figcaption class="muted small row">
      <span>${date(`${series[0].start}T12:00:00Z`)}</span>
      <span class="push">${date(`${series[series.length - 1].start}T12:00:00Z`)}</span>
    </figcaption>
  </figure>`;
}
