// Webhooks: list and create; a webhook's page: deliveries (a row opens to its body and
// error; a failed one can be retried), test, recover since, URL, events, secret, delete.

import { html, useState, useEffect } from '../../lib.js';
import { api } from '../../api.js';
import { dateTime } from '../../i18n.js';
import { useCtx, navigate } from '../../app.js';
import { usePage, useResource, useAction, useFlash, ErrorNote, Dialog, Loading, Time, Badge } from '../../ui.js';
import { words, word, CopyField, useConfirm, zoneToIso, zoneInput, zoneHint, submit, Head, Table, Input, SaveForm, post, useIdempotency,
  Btn, Act, Check, Picks, Described, OnOff, Actions } from './common.js';

const T = words('wh', `
intro|A webhook sends a signed POST to your URL when something happens in the store.|Um webhook envia um POST assinado para a sua URL quando algo acontece na loja.
new|New webhook|Novo webhook
none|No webhook yet.|Nenhum webhook ainda.
url|URL
events|Events|Eventos
n_events|{n} events|{n} eventos
active|Active|Ativo
paused|Paused|Pausado
created|Created|Criado
create|Create webhook|Criar webhook
back|All webhooks|Todos os webhooks
test|Send test|Enviar teste
queued|Queued: it shows in the deliveries in a moment.|Na fila: aparece nas entregas em instantes.
delete_text|Delete this webhook, its events and its delivery history?|Excluir este webhook, seus eventos e o histórico de entregas?
endpoint|Endpoint|Destino
secret|Signing secret|Segredo de assinatura
secret_show|Show signing secret|Mostrar segredo de assinatura
recover|Recover missed deliveries|Recuperar entregas perdidas
recover_hint|Sends again, once, every delivery that failed since then (up to 14 days back).|Reenvia, uma vez, cada entrega que falhou desde então (até 14 dias atrás).
since|Since|Desde
recover_go|Recover|Recuperar
recovered|{n} deliveries queued again.|{n} entregas na fila de novo.
deliveries|Deliveries|Entregas
no_deliveries|No delivery yet. Send a test to try the endpoint.|Nenhuma entrega ainda. Envie um teste para experimentar o destino.
refresh|Refresh|Atualizar
time|Time|Horário
event|Event|Evento
attempt|Attempt|Tentativa
response|Response|Resposta
duration|Duration|Duração
body|Response body|Corpo da resposta
error|Error|Erro
next|Next attempt|Próxima tentativa
event_id|Event id|Id do evento
retry|Send again|Reenviar
ds.succeeded|Delivered|Entregue
ds.pending|Retrying|Tentando de novo
ds.failed|Failed|Falhou`);

let catalog = null;
const eventCatalog = () =>
  (catalog ||= api.get('/webhooks/events/catalog').catch((e) => {
    catalog = null;
    throw e;
  }));

export function WebhookSettings({ parts }) {
  return parts[0] ? html`<${WebhookPage} id=${parts[0]} />` : html`<${WebhookList} />`;
}

const Active = ({ on }) => html`<${OnOff} on=${on} yes=${T('active')} no=${T('paused')} />`;

function WebhookList() {
  const { store } = useCtx();
  const list = usePage(`/stores/${store.id}/webhooks`, { limit: 50 });
  const [creating, setCreating] = useState(false);
  return html`<section>
    <${Head} title=${T('nav.webhooks')}><${Btn} cls="primary" id="webhook-new" onClick=${() => setCreating(true)}>+ ${T('new')}<//><//>
    <p class="muted">${T('intro')}</p>
    <${Table} id="webhooks" list=${list} none=${T('none')} attrs=${(w) => ({ 'data-webhook-id': w.id })} cols=${[
      [T('url'), (w) => html`<a href=${`#/settings/webhooks/${w.id}`}>${w.url}</a>`, 'break'],
      [T('events'), (w) => html`<span title=${w.events.join(', ')}>${T('n_events', { n: w.events.length })}</span>`],
      [T('c.status'), (w) => html`<${Active} on=${w.is_active} />`],
      [T('created'), (w) => html`<${Time} at=${w.created_at} />`],
    ]} />
    <${Dialog} open=${creating} id="webhook-dialog" title=${T('new')} onClose=${() => setCreating(false)}>
      <${WebhookForm} onClose=${() => setCreating(false)} />
    <//>
  </section>`;
}

function EventPicker({ picked, setPicked }) {
  const cat = useResource(eventCatalog, []);
  const d = Object.fromEntries((cat.data?.data || []).map((c) => [c.event, c.description]));
  return html`<${Loading} res=${cat}>
    <div class="event-list" id="webhook-events">
      <${Picks} items=${Object.keys(d)} picked=${picked} set=${setPicked} cls="check tall" label=${(e) => Described(e, d[e])} />
    </div>
  <//>`;
}

const ActiveBox = ({ id, on, set }) => html`<${Check} cls="check field" id=${id} on=${on} set=${set} label=${T('active')} />`;

function WebhookForm({ onClose }) {
  const { store } = useCtx();
  const keyFor = useIdempotency();
  const [url, setUrl] = useState('https://');
  const [events, setEvents] = useState([]);
  const [active, setActive] = useState(true);
  useEffect(() => document.getElementById('webhook-url')?.focus(), []);
  const [create, busy, error] = useAction(async () => {
    const body = { url: url.trim(), events, is_active: active };
    const w = await api.post(`/stores/${store.id}/webhooks`, body, { idempotencyKey: keyFor(body) });
    navigate(`/settings/webhooks/${w.id}`);
  });
  return html`<form onSubmit=${submit(create)}>
    <${Input} id="webhook-url" label=${T('url')} type="url" required maxlength="2048" value=${url} set=${setUrl} />
    <fieldset class="plain">
      <legend>${T('events')}</legend>
      <${EventPicker} picked=${events} setPicked=${setEvents} />
    </fieldset>
    <${ActiveBox} id="webhook-active" on=${active} set=${setActive} />
    <${ErrorNote} error=${error} />
    <${Actions} close=${onClose} id="webhook-create" busy=${busy} label=${T('create')} />
  </form>`;
}

function WebhookPage({ id }) {
  const { store } = useCtx();
  const base = `/stores/${store.id}/webhooks/${id}`;
  const wh = useResource(() => api.get(base), [id]);
  const deliveries = usePage(`${base}/deliveries`, { limit: 25 });
  const [flash, flashNode] = useFlash();
  const [ask, confirmNode] = useConfirm('webhook-delete-confirm');
  const w = wh.data;
  // The shell focuses the heading when the section changes; this page is one level deeper.
  useEffect(() => w && document.querySelector('main h1')?.focus(), [Boolean(w)]);
  const queued = () => {
    flash(T('queued'));
    setTimeout(deliveries.reload, 1500);
  };
  const [test, testing, testError] = useAction(async () => {
    await post(`${base}/test`);
    queued();
  });
  const del = T('c.delete');
  return html`<section>
    <a class="crumb" href="#/settings/webhooks">← ${T('back')}</a>
    <${Loading} res=${wh}>
      ${w &&
      html`<${Head} title=${html`<span class="break">${w.url}</span> <${Active} on=${w.is_active} />`}>
          <${Btn} id="webhook-test" disabled=${testing} onClick=${test}>${T('test')}<//>
          <${Btn} cls="danger" id="webhook-delete" onClick=${() => ask(del, T('delete_text'), async () => {
            await api.del(base);
            navigate('/settings/webhooks');
          })}>${del}<//>
        <//>
        <${ErrorNote} error=${testError} />
        ${flashNode}
        <${Deliveries} list=${deliveries} base=${base} queued=${queued} />
        <div class="grid-even">
          <${Endpoint} w=${w} base=${base} onSaved=${wh.setData} />
          <${Recover} base=${base} reload=${deliveries.reload} />
        </div>
        <${Events} w=${w} base=${base} onSaved=${wh.setData} />`}
    <//>
    ${confirmNode}
  </section>`;
}

function Endpoint({ w, base, onSaved }) {
  const [url, setUrl] = useState(w.url);
  const [active, setActive] = useState(w.is_active);
  const [secret, setSecret] = useState(false);
  const run = async () => onSaved(await api.put(base, { url: url.trim(), is_active: active }));
  return html`<${SaveForm} id="webhook-edit" btn="webhook-save" title=${T('endpoint')} run=${run}>
    <${Input} id="webhook-edit-url" label=${T('url')} type="url" required maxlength="2048" value=${url} set=${setUrl} />
    <${ActiveBox} id="webhook-edit-active" on=${active} set=${setActive} />
    ${w.secret &&
    html`<div class="field">${secret
      ? html`<${CopyField} id="webhook-secret" label=${T('secret')} value=${w.secret} />`
      : html`<button type="button" class="link" id="webhook-secret-show" onClick=${() => setSecret(true)}>${T('secret_show')}</button>`}</div>`}
  <//>`;
}

/** Saves the difference: subscribes the events added, unsubscribes those removed. */
function Events({ w, base, onSaved }) {
  const [picked, setPicked] = useState(w.events);
  const run = async () => {
    const add = picked.filter((e) => !w.events.includes(e));
    if (add.length) await post(`${base}/events`, { events: add });
    for (const ev of w.events.filter((e) => !picked.includes(e))) await api.del(`${base}/events/${encodeURIComponent(ev)}`);
    onSaved(await api.get(base));
  };
  return html`<${SaveForm} id="webhook-events-form" btn="webhook-events-save" title=${T('events')} run=${run}>
    <${EventPicker} picked=${picked} setPicked=${setPicked} />
  <//>`;
}

function Recover({ base, reload }) {
  const day = 86400000;
  const [since, setSince] = useState(() => zoneInput(Date.now() - day));
  const run = async () => {
    const r = await post(`${base}/recover`, { since: zoneToIso(since) });
    setTimeout(reload, 1500);
    return T('recovered', { n: r.enqueued });
  };
  return html`<${SaveForm} id="webhook-recover-form" btn="webhook-recover" title=${T('recover')} label=${T('recover_go')} run=${run}>
    <p class="muted small">${T('recover_hint')}</p>
    <${Input} id="webhook-recover-since" label=${T('since')} hint=${zoneHint()} type="datetime-local" required value=${since} set=${setSince}
      min=${zoneInput(Date.now() - 14 * day)} max=${zoneInput(Date.now())} />
  <//>`;
}

function Deliveries({ list, base, queued }) {
  const [open, setOpen] = useState(null);
  return html`<div class="page-head">
    <h2>${T('deliveries')}</h2>
    <${Btn} cls="ghost" id="deliveries-refresh" disabled=${list.loading} onClick=${list.reload}>↻ ${T('refresh')}<//>
  </div>
  <${Table} id="deliveries" list=${list} none=${T('no_deliveries')} attrs=${(d) => ({ 'data-delivery-id': d.id, 'data-status': d.status })} cols=${[
    [T('time'), (d) => html`<button type="button" class="link" aria-expanded=${open === d.id ? 'true' : 'false'} aria-controls=${`dl-${d.id}`}
      onClick=${() => setOpen(open === d.id ? null : d.id)}>${open === d.id ? '▾' : '▸'} ${dateTime(d.created_at)}</button>`],
    [T('event'), (d) => html`<span class="mono small">${d.event}</span>`],
    [T('c.status'), (d) => html`<${Badge} value=${d.status} tones=${{ succeeded: 'ok', pending: 'warn', failed: 'bad' }} label=${word('ds', d.status)} />`],
    [T('attempt'), (d) => d.attempt, 'num'],
    [T('response'), (d) => d.response_status ?? '—', 'num'],
    [T('duration'), (d) => `${d.duration_ms} ms`, 'num'],
  ]} more=${(d) => open === d.id &&
    html`<tr class="detail-row" id=${`dl-${d.id}`}><td colspan="6"><div class="stack">
      <dl class="facts">
        <dt>${T('event_id')}</dt><dd class="mono small">${d.event_id}</dd>
        ${d.next_attempt_at && html`<dt>${T('next')}</dt><dd><${Time} at=${d.next_attempt_at} /></dd>`}
        ${d.error && html`<dt>${T('error')}</dt><dd class="break">${d.error}</dd>`}
        <dt>${T('body')}</dt><dd>${d.response_body ? html`<pre class="mono" tabindex="0">${d.response_body}</pre>` : '—'}</dd>
      </dl>
      ${d.status === 'failed' &&
      html`<${Act} data-action="retry" run=${async () => {
        await post(`${base}/deliveries/${d.id}/retry`);
        queued();
      }}>${T('retry')}<//>`}
    </div></td></tr>`} />`;
}
