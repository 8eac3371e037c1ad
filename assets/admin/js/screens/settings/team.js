// Team: members and their roles (change, remove), and an invite whose code is shown once.

import { html, useState } from '../../lib.js';
import { api } from '../../api.js';
import { dateTime } from '../../i18n.js';
import { useCtx } from '../../app.js';
import { usePage, useAction, useFlash, ErrorNote, Time } from '../../ui.js';
import { words, word, CopyField, useConfirm, submit, Head, Table, Input, Select, useIdempotency, Btn } from './common.js';

const T = words('team', `
role|Role|Papel
role_of|Role of {email}|Papel de {email}
since|Member since|Membro desde
you|you|você
apply|Apply|Aplicar
remove|Remove|Remover
remove_text|Remove {email}? They lose access at once, and the API tokens they made here stop working.|Remover {email}? A pessoa perde o acesso na hora, e os tokens de API que criou aqui param de funcionar.
changed|Role changed.|Papel alterado.
invite|Invite someone|Convidar alguém
invite_send|Create invite|Criar convite
invite_done|Invite for {email} ({role}), valid until {until}. Send them this code; they accept it with their password.|Convite para {email} ({role}), válido até {until}. Envie este código; a pessoa aceita com a senha dela.
code|Invite code|Código do convite
again|Invite someone else|Convidar outra pessoa
role.owner|Owner|Dono
role.admin|Admin|Administrador
role.staff|Staff|Equipe
role.viewer|Viewer|Leitor
role_hint|Owner: everything. Admin: all but the plan, payments and deleting the store. Staff: sees all; changes products, orders, customers, stock and the inbox. Viewer: sees only.|Dono: tudo. Administrador: tudo, menos plano, pagamentos e excluir a loja. Equipe: vê tudo; altera produtos, pedidos, clientes, estoque e atendimento. Leitor: só vê.`);

const ROLES = ['owner', 'admin', 'staff', 'viewer'];
const roles = (rs) => rs.map((r) => [r, word('role', r)]);

export function TeamSettings() {
  const { store, user } = useCtx();
  const base = `/stores/${store.id}/members`;
  const list = usePage(base, { limit: 50 });
  const [flash, flashNode] = useFlash();
  const [ask, confirmNode] = useConfirm('member-remove');
  const me = list.rows.find((m) => m.user_id === user.id);
  const changed = () => {
    flash(T('changed'));
    list.reload();
  };
  return html`<section>
    <${Head} title=${T('nav.team')} />
    ${flashNode}
    <${Table} id="members" list=${list} attrs=${(m) => ({ 'data-user-id': m.user_id, key: m.user_id })} cols=${[
      [T('c.email'), (m) => html`${m.email} ${m.user_id === user.id && html`<span class="badge info">${T('you')}</span>`}`],
      [T('role'), (m) => html`<${RoleCell} key=${m.user_id + m.role} m=${m} base=${base} onChanged=${changed} />`],
      [T('since'), (m) => html`<${Time} at=${m.created_at} />`],
      ['', (m) => html`<${Btn} cls="ghost" data-action="remove" aria-label=${`${T('remove')} ${m.email}`}
        onClick=${() => ask(T('remove'), T('remove_text', { email: m.email }), async () => {
          await api.del(`${base}/${m.user_id}`);
          list.reload();
        })}>${T('remove')}<//>`, 'right'],
    ]} />
    <p class="muted small">${T('role_hint')}</p>
    <${Invite} canOwner=${!me || me.role === 'owner'} />
    ${confirmNode}
  </section>`;
}

function RoleCell({ m, base, onChanged }) {
  const [role, setRole] = useState(m.role);
  const [apply, busy, error] = useAction(async () => {
    await api.patch(`${base}/${m.user_id}`, { role });
    onChanged();
  });
  const id = `member-role-${m.user_id}`;
  return html`<div class="row">
      <label class="sr-only" for=${id}>${T('role_of', { email: m.email })}</label>
      <select id=${id} class="inline" value=${role} onChange=${(e) => setRole(e.target.value)}>
        ${roles(ROLES).map(([r, l]) => html`<option value=${r}>${l}</option>`)}
      </select>
      ${role !== m.role && html`<${Btn} cls="primary" disabled=${busy} onClick=${apply}>${T('apply')}<//>`}
    </div>
    <${ErrorNote} error=${error} />`;
}

function Invite({ canOwner }) {
  const { store } = useCtx();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState('staff');
  const [made, setMade] = useState(null);
  const keyFor = useIdempotency();
  const [send, busy, error] = useAction(async () => {
    const body = { email: email.trim(), role };
    setMade(await api.post(`/stores/${store.id}/invites`, body, { idempotencyKey: keyFor(body) }));
  });
  return made
    ? html`<div class="card" id="invite-result">
      <h2>${T('invite')}</h2>
      <p>${T('invite_done', { email: made.email, role: word('role', made.role), until: dateTime(made.expires_at) })}</p>
      <${CopyField} id="invite-token" label=${T('code')} value=${made.token} once />
      <${Btn} id="invite-again" onClick=${() => (setMade(null), setEmail(''))}>${T('again')}<//>
    </div>`
    : html`<form class="card" id="invite-form" onSubmit=${submit(send)}>
      <h2>${T('invite')}</h2>
      <${ErrorNote} error=${error} />
      <div class="grid-even">
        <${Input} id="invite-email" label=${T('c.email')} type="email" required autocomplete="off" value=${email} set=${setEmail} />
        <${Select} id="invite-role" label=${T('role')} value=${role} set=${setRole} options=${roles(ROLES.filter((r) => canOwner || r !== 'owner'))} />
      </div>
      <button type="submit" class="btn primary" id="invite-send" disabled=${busy}>${T('invite_send')}</button>
    </form>`;
}
