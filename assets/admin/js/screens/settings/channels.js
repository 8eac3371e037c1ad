// Channels: site chat (key, allowed sites, widget snippet), messaging-app and e-mail (the URL
// their provider calls); create, edit, turn on or off, delete.

import { html, useState, useEffect } from '../../lib.js';
import { api } from '../../api.js';
import { useCtx } from '../../app.js';
import { usePage, useAction, ErrorNote, Dialog, Loading, Pager } from '../../ui.js';
import { words, word, CopyField, useConfirm, submit, Head, Input, Select, useIdempotency, Btn, OnOff, Actions } from './common.js';

const T = words('ch', `
intro|Where customers reach you; their conversations arrive in the inbox.|Onde os clientes falam com você; as conversas chegam no atendimento.
new|New channel|Novo canal
none|No channel yet.|Nenhum canal ainda.
kind|Type|Tipo
kind.storefront_chat|Site chat|Chat do site
kind.msgapp|Messaging app|Aplicativo de mensagens
kind.email|E-mail
enable|Turn on|Ligar
disable|Turn off|Desligar
key|Widget key|Chave do widget
origins|Sites allowed to show the chat|Sites que podem mostrar o chat
origins_hint|One per line (https://shop.example.com). Empty: any site.|Um por linha (https://loja.exemplo.com). Vazio: qualquer site.
any_site|Any site|Qualquer site
snippet|Code to paste before </body> on your site|Código para colar antes de </body> no seu site
snippet_hint|Optional: data-title, data-color (#rrggbb), data-name, data-email.|Opcionais: data-title, data-color (#rrggbb), data-name, data-email.
phone_number_id|Phone number id|Id do número de telefone
app_secret|App secret|Segredo do aplicativo
verify_token|Verify token|Token de verificação
generate|Generate|Gerar
callback|Callback URL (give it to the messaging app with the verify token)|URL de callback (informe ao aplicativo com o token de verificação)
address|Support address|Endereço de atendimento
inbound_secret|Inbound secret|Segredo de entrada
inbound|Inbound URL (your mail service POSTs here with X-Inbound-Secret)|URL de entrada (o serviço de e-mail envia para cá com X-Inbound-Secret)
keep_secret|Empty keeps the current one.|Vazio mantém o atual.
create|Create channel|Criar canal
delete_text|Delete “{name}” with its conversations and messages?|Excluir “{name}” com as conversas e mensagens dele?`);

const KINDS = ['storefront_chat', 'msgapp', 'email'];

export function ChannelSettings() {
  const { store } = useCtx();
  const base = `/stores/${store.id}/channels`;
  const list = usePage(base, { limit: 50 });
  const [editing, setEditing] = useState(null);
  const [ask, confirmNode] = useConfirm('channel-delete-confirm');
  const del = T('c.delete');
  const remove = (c) =>
    ask(del, T('delete_text', { name: c.name }), async () => {
      await api.del(`${base}/${c.id}`);
      list.reload();
    });
  const close = () => setEditing(null);
  return html`<section>
    <${Head} title=${T('nav.channels')}><${Btn} cls="primary" id="channel-new" onClick=${() => setEditing('new')}>+ ${T('new')}<//><//>
    <p class="muted">${T('intro')}</p>
    <${Loading} res=${list} empty=${!list.loading && !list.rows.length && T('none')}>
      <div class="stack" id="channels">
        ${list.rows.map((c) => html`<${ChannelCard} key=${c.id} c=${c} base=${base} onChanged=${list.reload} onEdit=${() => setEditing(c)} onDelete=${() => remove(c)} />`)}
      </div>
    <//>
    <${Pager} list=${list} />
    <${Dialog} open=${Boolean(editing)} id="channel-dialog" onClose=${close} title=${editing === 'new' ? T('new') : editing?.name || ''}>
      <${ChannelForm} c=${editing === 'new' ? null : editing} base=${base} onClose=${close} onDone=${() => (close(), list.reload())} />
    <//>
    ${confirmNode}
  </section>`;
}

function ChannelCard({ c, base, onChanged, onEdit, onDelete }) {
  const [toggle, busy, error] = useAction(async () => {
    await api.patch(`${base}/${c.id}`, { enabled: !c.enabled });
    onChanged();
  });
  const url = `${location.origin}/v1/channels/${c.kind}/${c.id}/`;
  const facts = (k, v, cls) => html`<dl class="facts"><dt>${T(k)}</dt><dd class=${cls}>${v}</dd></dl>`;
  const copy = (id, k, value, extra) => html`<div class="spaced"><${CopyField} id=${`${id}-${c.id}`} label=${T(k)} value=${value} ...${extra} /></div>`;
  return html`<article class="card" data-channel-id=${c.id} data-kind=${c.kind} aria-labelledby=${`ch-${c.id}`}>
    <div class="page-head">
      <h2 id=${`ch-${c.id}`}>${c.name}</h2>
      <div class="row"><span class="badge info">${word('kind', c.kind)}</span><${OnOff} on=${c.enabled} /></div>
    </div>
    <${ErrorNote} error=${error} />
    ${c.kind === 'storefront_chat' &&
    html`<dl class="facts">
        <dt>${T('key')}</dt><dd class="mono small break">${c.key}</dd>
        <dt>${T('origins')}</dt><dd>${c.allowed_origins.join(', ') || T('any_site')}</dd>
      </dl>
      ${c.key &&
      copy('snippet', 'snippet', `<script src="${location.origin}/widget.js" data-key="${c.key}"></script>`, { multiline: true, hint: T('snippet_hint') })}`}
    ${c.kind === 'msgapp' && html`${facts('phone_number_id', c.settings.phone_number_id || '—', 'mono')}${copy('callback', 'callback', `${url}webhook`)}`}
    ${c.kind === 'email' && html`${facts('address', c.settings.address || '—')}${copy('inbound', 'inbound', `${url}inbound`)}`}
    <div class="row">
      <${Btn} data-action="edit" onClick=${onEdit}>${T('c.edit')}<//>
      <${Btn} data-action="toggle" disabled=${busy} onClick=${toggle}>${T(c.enabled ? 'disable' : 'enable')}<//>
      <${Btn} cls="ghost" data-action="delete" onClick=${onDelete}>${T('c.delete')}<//>
    </div>
  </article>`;
}

// The settings each kind takes; a secret left empty on edit is kept.
const FIELDS = { msgapp: ['phone_number_id', 'app_secret', 'verify_token'], email: ['address', 'inbound_secret'] };
const SECRETS = ['app_secret', 'verify_token', 'inbound_secret'];

function ChannelForm({ c, base, onDone, onClose }) {
  const keyFor = useIdempotency();
  const [kind, setKind] = useState(c ? c.kind : 'storefront_chat');
  const [name, setName] = useState(c ? c.name : '');
  const [origins, setOrigins] = useState(c ? c.allowed_origins.join('\n') : '');
  const [s, setS] = useState(c ? { ...c.settings } : {});
  useEffect(() => document.getElementById(c ? 'channel-name' : 'channel-kind')?.focus(), []);
  const [save, busy, error] = useAction(async () => {
    const body = { name: name.trim() };
    if (kind === 'storefront_chat') body.allowed_origins = origins.split(/\s+/).filter(Boolean);
    else body.settings = Object.fromEntries(FIELDS[kind].filter((f) => (s[f] || '').trim()).map((f) => [f, s[f].trim()]));
    if (c) await api.patch(`${base}/${c.id}`, body);
    else await api.post(base, { kind, ...body }, { idempotencyKey: keyFor({ kind, ...body }) });
    onDone();
  });
  const put = (f, v) => setS((cur) => ({ ...cur, [f]: v }));
  const field = (f) => {
    const secret = SECRETS.includes(f);
    const input = html`<${Input} id=${`channel-${f}`} label=${T(f)} value=${s[f] || ''} required=${!c || !secret} set=${(v) => put(f, v)}
      type=${f === 'app_secret' ? 'password' : f === 'address' ? 'email' : 'text'} autocomplete="off" maxlength="255" hint=${c && secret ? T('keep_secret') : null} />`;
    if (f === 'app_secret' || !secret) return input;
    const random = () => [...crypto.getRandomValues(new Uint8Array(24))].map((x) => x.toString(16).padStart(2, '0')).join('');
    return html`<div class="copy-row">${input}<${Btn} cls="gen" onClick=${() => put(f, random())}>${T('generate')}<//></div>`;
  };
  return html`<form onSubmit=${submit(save)}>
    ${!c && html`<${Select} id="channel-kind" label=${T('kind')} value=${kind} set=${setKind} options=${KINDS.map((k) => [k, word('kind', k)])} />`}
    <${Input} id="channel-name" label=${T('c.name')} required maxlength="120" value=${name} set=${setName} />
    ${kind === 'storefront_chat'
      ? html`<${Input} id="channel-origins" label=${T('origins')} hint=${T('origins_hint')} rows="3" spellcheck="false" value=${origins} set=${setOrigins} />`
      : FIELDS[kind].map(field)}
    <${ErrorNote} error=${error} />
    <${Actions} close=${onClose} id="channel-save" busy=${busy} label=${c ? T('c.save') : T('create')} />
  </form>`;
}
