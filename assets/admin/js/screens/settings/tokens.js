// API tokens: list, create (name, everything or permissions by area, expiry), rotate and
// revoke. A new value is shown once.

import { html, useState, useEffect } from '../../lib.js';
import { api } from '../../api.js';
import { date, ago } from '../../i18n.js';
import { useCtx } from '../../app.js';
import { usePage, useResource, useAction, ErrorNote, Dialog, Loading } from '../../ui.js';
import { words, word, CopyField, useConfirm, zoneToIso, zoneHint, submit, Head, Table, Input, post, useIdempotency, Btn, Picks, Described, Actions } from './common.js';

const T = words('tokens', `
intro|A token lets a script use the API for this store only, with at most your permissions.|Um token permite que um script use a API só desta loja, com no máximo as suas permissões.
new|New token|Novo token
none|No API token yet.|Nenhum token de API ainda.
scopes|Permissions|Permissões
value|Token
expires|Expires|Expira
expired|expired|expirado
all|Everything you can do|Tudo o que você pode fazer
chosen|Only the permissions chosen below|Só as permissões escolhidas abaixo
pick_one|Pick at least one permission.|Escolha ao menos uma permissão.
expires_at|Expires on (optional)|Expira em (opcional)
create|Create token|Criar token
shown|Token “{name}”
rotate|Rotate|Trocar valor
rotate_text|Rotate “{name}”? It gets a new value and the current one stops working at once.|Trocar o valor de “{name}”? O valor atual para de funcionar na hora.
revoke|Revoke|Revogar
revoke_text|Revoke “{name}”? Anything using it is refused from now on.|Revogar “{name}”? Tudo o que o usa passa a ser recusado.
area.organizations|Organization|Organização
area.stores|Store|Loja
area.members|Team|Equipe
area.api_tokens|API tokens|Tokens de API
area.catalog|Catalog|Catálogo
area.customers|Customers|Clientes
area.orders|Orders|Pedidos
area.inventory|Stock|Estoque
area.reviews|Reviews|Avaliações
area.conversations|Inbox|Atendimento
area.webhooks|Webhooks
area.cms|Pages|Páginas
area.marketing|Marketing
area.workflows|Automations|Automações
area.brand|Brand|Marca
area.assistant|Assistant|Assistente
area.billing|Billing|Cobrança
area.audit|Audit log|Auditoria`);

export function TokenSettings() {
  const { store } = useCtx();
  const base = `/stores/${store.id}/api-tokens`;
  const list = usePage(base, { limit: 50 });
  const [creating, setCreating] = useState(false);
  const [shown, setShown] = useState(null);
  const [ask, confirmNode] = useConfirm('token-confirm');
  const act = (k, what, run) => html`<${Btn} cls=${what === 'revoke' ? 'ghost' : ''} data-action=${what}
    onClick=${() => ask(T(what), T(`${what}_text`, { name: k.name }), async () => (await run(), list.reload()))}>${T(what)}<//>`;
  const never = T('c.never');
  return html`<section>
    <${Head} title=${T('nav.tokens')}><${Btn} cls="primary" id="token-new" onClick=${() => setCreating(true)}>+ ${T('new')}<//><//>
    <p class="muted">${T('intro')}</p>
    <${Table} id="tokens" list=${list} none=${T('none')} attrs=${(k) => ({ 'data-token-id': k.id })} cols=${[
      [T('c.name'), (k) => html`<strong>${k.name}</strong>`],
      [T('scopes'), (k) => (k.scopes.includes('*') ? T('all') : html`<span class="mono small">${k.scopes.join(', ')}</span>`)],
      [T('value'), (k) => html`<span class="mono">…${k.last4}</span>`],
      [T('c.last_used'), (k) => (k.last_used_at ? ago(k.last_used_at) : never)],
      [T('expires'), (k) => html`${k.expires_at ? date(k.expires_at) : never}
        ${Date.parse(k.expires_at) < Date.now() && html` <span class="badge bad">${T('expired')}</span>`}`],
      ['', (k) => html`<div class="row end">
        ${act(k, 'rotate', async () => setShown(await post(`${base}/${k.id}/rotate`)))}
        ${act(k, 'revoke', () => api.del(`${base}/${k.id}`))}
      </div>`, 'right'],
    ]} />
    <${Dialog} open=${creating} id="token-dialog" title=${T('new')} onClose=${() => setCreating(false)}>
      <${TokenForm} base=${base} onClose=${() => setCreating(false)} onCreated=${(k) => {
        setCreating(false);
        setShown(k);
        list.reload();
      }} />
    <//>
    <${Dialog} open=${Boolean(shown)} id="token-shown" onClose=${() => setShown(null)} title=${shown ? T('shown', { name: shown.name }) : ''}>
      <${CopyField} id="token-value" label=${T('value')} value=${shown?.value || ''} once />
      <div class="dialog-actions"><${Btn} cls="primary" id="token-done" onClick=${() => setShown(null)}>${T('c.done')}<//></div>
    <//>
    ${confirmNode}
  </section>`;
}

function TokenForm({ base, onCreated, onClose }) {
  const catalog = useResource(() => api.get('/permissions/catalog'), []);
  const keyFor = useIdempotency();
  const [name, setName] = useState('');
  const [all, setAll] = useState(true);
  const [picked, setPicked] = useState([]);
  const [expires, setExpires] = useState('');
  const [problem, setProblem] = useState(null);
  useEffect(() => document.getElementById('token-name')?.focus(), []);
  const [create, busy, error] = useAction(async () => {
    setProblem(!all && !picked.length);
    if (!all && !picked.length) return;
    const body = { name: name.trim(), scopes: all ? ['*'] : picked };
    // The end of the chosen day in the store's zone.
    if (expires) body.expires_at = zoneToIso(`${expires}T23:59`);
    onCreated(await api.post(base, body, { idempotencyKey: keyFor(body) }));
  });
  const areas = {};
  for (const p of catalog.data?.data || []) (areas[p.area] ||= {})[p.code] = p.description;
  const mode = (on, id) => html`<label class="check"><input type="radio" name="token-mode" id=${`token-${id}`} checked=${all === on}
    onChange=${() => setAll(on)} />${T(id)}</label>`;
  return html`<form onSubmit=${submit(create)}>
    <${Input} id="token-name" label=${T('c.name')} required maxlength="120" autocomplete="off" value=${name} set=${setName} />
    <fieldset class="plain">
      <legend>${T('scopes')}</legend>
      ${mode(true, 'all')}${mode(false, 'chosen')}
      ${problem && html`<p class="field-error">${T('pick_one')}</p>`}
    </fieldset>
    ${!all &&
    html`<${Loading} res=${catalog}>
      <div class="scope-list" id="token-scopes">
        ${Object.entries(areas).map(([area, perms]) => html`<fieldset class="scope-group">
          <legend>${word('area', area)}</legend>
          <${Picks} items=${Object.keys(perms)} picked=${picked} set=${setPicked} cls="check tall" label=${(c) => Described(c, perms[c])} />
        </fieldset>`)}
      </div>
    <//>`}
    <${Input} id="token-expires" label=${T('expires_at')} hint=${zoneHint()} type="date" value=${expires} set=${setExpires} />
    <${ErrorNote} error=${error} />
    <${Actions} close=${onClose} id="token-create" busy=${busy} label=${T('create')} />
  </form>`;
}
