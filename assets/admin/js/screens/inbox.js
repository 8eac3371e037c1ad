// Inbox: the conversation list (tabs with counts, search, "Load more") beside the open thread,
// kept live by the team socket (socket.js): messages, typing, presence, who else is viewing.

import { html, useState, useEffect, useRef } from '../lib.js';
import { api } from '../api.js';
import { t, has, words, dateTime, getZone } from '../i18n.js';
import { useCtx, href } from '../app.js';
import { useResource, useAction, ErrorNote, Loading, Time, Badge } from '../ui.js';
import { submit, zoneToIso } from './settings/common.js';
import { AgentSocket } from '../socket.js';

// Words: key|en-US|pt-BR (one text when both are the same).
const w = words('inbox', `
title|Inbox|Atendimento
tabs|Conversations by status|Conversas por status
tab.open|Open|Abertas
tab.mine|Mine|Minhas
tab.unassigned|Unassigned|Sem responsável
tab.pending|Pending|Pendentes
tab.snoozed|Snoozed|Adiadas
tab.resolved|Resolved|Resolvidas
search|Search conversations|Buscar conversas
search_hint|Name, e-mail, phone or message text|Nome, e-mail, telefone ou texto
find|Search|Buscar
sort|Order|Ordem
sort.newest_activity|Newest activity|Atividade mais recente
sort.oldest_waiting|Waiting longest|Esperando há mais tempo
sort.priority|Priority|Prioridade
none|No conversations here.|Nenhuma conversa aqui.
more|Load more|Carregar mais
unread|{n} unread|{n} não lidas
pick|Pick a conversation to read it and reply.|Escolha uma conversa para ler e responder.
back|All conversations|Todas as conversas
live|Live|Ao vivo
connecting|Connecting…|Conectando…
reconnecting|Reconnecting…|Reconectando…
stopped|Not receiving updates|Sem atualizações ao vivo
reconnect|Reconnect|Reconectar
team_online|Team online: {names}|Equipe online: {names}
you|you|você
online|Online now|Online agora
viewing|Also viewing: {names}|Também vendo: {names}
typing|{name} is typing…|{name} está digitando…
typing_short|typing…|digitando…
from.visitor|Visitor|Visitante
from.agent|Team|Equipe
from.bot|Bot|Robô
from.system|System|Sistema
me|You|Você
note|Internal note|Nota interna
older|Show earlier messages|Mostrar mensagens anteriores
no_messages|No messages yet.|Nenhuma mensagem ainda.
tick.sent|Sent|Enviada
tick.delivered|Delivered|Entregue
tick.read|Read|Lida
tick.failed|Not delivered|Não entregue
reply|Reply|Resposta
reply_hint|Enter sends, Shift+Enter starts a new line.|Enter envia, Shift+Enter quebra a linha.
files|Files (up to 4)|Anexos (até 4)
send|Send|Enviar
add_note|Add as internal note|Adicionar como nota interna
window_open|The messaging-app reply window closes {at}.|A janela de resposta do aplicativo fecha {at}.
window_closed|The 24-hour reply window closed {at}: free-form replies are refused until the contact writes again.|A janela de 24 horas fechou {at}: respostas livres são recusadas até o contato escrever de novo.
status|Status
status.open|Open|Aberta
status.pending|Pending|Pendente
status.snoozed|Snoozed|Adiada
status.resolved|Resolved|Resolvida
snoozed_until|Snoozed until {at}|Adiada até {at}
snooze_for|Snooze until|Adiar até
snooze.1h|In 1 hour|Daqui a 1 hora
snooze.4h|In 4 hours|Daqui a 4 horas
snooze.1d|Tomorrow, same time|Amanhã, mesmo horário
snooze.7d|In a week|Daqui a uma semana
snooze.custom|Pick a date and time…|Escolher data e hora…
snooze_at|Date and time ({zone})|Data e hora ({zone})
snooze|Snooze|Adiar
snooze_bad|Pick a future date and time.|Escolha uma data e hora no futuro.
assignee|Assignee|Responsável
assign_me|Assign to me|Atribuir a mim
priority|Priority|Prioridade
priority.none|No priority|Sem prioridade
priority.low|Low|Baixa
priority.medium|Medium|Média
priority.high|High|Alta
priority.urgent|Urgent|Urgente
kind.storefront_chat|Site chat|Chat do site
kind.msgapp|Messaging app|Aplicativo de mensagens
kind.email|E-mail
customer|Customer page|Página do cliente
waiting|waiting since {at}|esperando desde {at}
attachment|Attachment|Anexo`);
// Unknown enum values show raw.
const word = (p, v) => (has(`inbox.${p}.${v}`) ? w(`${p}.${v}`) : v);

const TABS = ['open', 'mine', 'unassigned', 'pending', 'snoozed', 'resolved'];
const SORTS = ['newest_activity', 'oldest_waiting', 'priority'];
const PRIORITY_TONES = { urgent: 'bad', high: 'warn', medium: 'info', low: 'muted' };
const STATUS_TONES = { open: 'info', pending: 'warn', snoozed: 'muted', resolved: 'ok' };

const short = (email) => (email ? email.split('@')[0] : '…');
const when = (iso) => Date.parse(iso) || 0;
const byTime = (a, b) => when(a.created_at) - when(b.created_at) || (a.id > b.id) - (a.id < b.id);
const cur = (p) => (p.has_more ? p.next_cursor : null);
const visible = () => document.visibilityState === 'visible';
const mergeById = (list, add) => [...new Map([...(list || []), ...add].map((m) => [m.id, m])).values()].sort(byTime);
// `d`: a bare conversation (no assignee name).
const mergeConv = (old, d, people) => {
  const a = d.assignee_user_id;
  return { ...old, ...d, assignee_name: a ? (a === old?.assignee_user_id ? old.assignee_name : people[a] || null) : null };
};
const tabParams = (tab) =>
  ({ mine: { status: 'open', assignee: 'me' }, unassigned: { status: 'open', assignee: 'none' } })[tab] || { status: tab };
const inTab = (c, tab, me) =>
  tab === 'mine' ? c.status === 'open' && c.assignee_user_id === me
    : tab === 'unassigned' ? c.status === 'open' && !c.assignee_user_id : c.status === tab;

// The socket, and who is online, typing, viewing.
function useRealtime(storeId, user) {
  const [st, setSt] = useState({ status: 'connecting', online: [], visitors: {}, typing: {}, viewers: {} });
  const r = useRef({ fns: new Set(), team: [], known: {} }).current;
  const viewing = (conv) => ({ type: 'viewing', conversation_id: conv, user_name: user.email });
  useEffect(() => {
    const timers = {};
    const put = (k, fn) => setSt((s) => ({ ...s, [k]: fn(s[k]) }));
    const announce = () => r.viewing && s.send(viewing(r.viewing));
    const typed = (conv, who) => {
      clearTimeout(timers[conv]);
      put('typing', (m) => ({ ...m, [conv]: who }));
      if (who) timers[conv] = setTimeout(() => typed(conv), 6000);
    };
    const s = (r.sock = new AgentSocket(storeId, {
      onStatus: (v) => put('status', () => v),
      onHello: announce,
      onCatchUp: () => r.fns.forEach((fn) => fn({ type: 'catchup' })),
      onEvent: (f) => {
        const d = f.data || {};
        const conv = d.conversation_id;
        if (f.type === 'presence') {
          if (d.online) {
            if (d.online.some((id) => !r.team.includes(id))) announce(); // newcomers learn who views what
            r.team = d.online;
            put('online', () => d.online);
          } else if (conv) put('visitors', (v) => ({ ...v, [conv]: !!d.visitor_online }));
        } else if (f.type === 'typing' && conv) {
          if (d.from === 'agent' && d.user_id === user.id) return;
          typed(conv, d.typing && { from: d.from, user_id: d.user_id });
        } else if (f.type === 'viewing' && d.user_id && d.user_id !== user.id) {
          const now = d.viewing ? conv : null;
          const before = r.known[d.user_id];
          r.known = { ...r.known, [d.user_id]: { conv: now, name: d.user_name } };
          put('viewers', () => r.known);
          // Someone opened this tab's thread: say this tab is here too.
          if (now && now === r.viewing && before?.conv !== now) announce();
        } else if (f.type === 'message:new' && d.sender === 'visitor' && conv) typed(conv);
        r.fns.forEach((fn) => fn(f));
      },
    }));
    s.start();
    return () => {
      s.send(viewing(null));
      s.stop();
      Object.values(timers).forEach(clearTimeout);
    };
  }, [storeId]);
  return {
    ...st,
    subscribe: (fn) => r.fns.add(fn) && (() => r.fns.delete(fn)),
    view: (conv) => {
      r.viewing = conv;
      r.sock?.send(viewing(conv));
    },
    sendTyping: (conv, typing) => r.sock?.send({ type: 'typing', conversation_id: conv, typing }),
    retry: () => r.sock.retry(),
  };
}

export function Inbox({ parts, query }) {
  const { store, user } = useCtx();
  const rt = useRealtime(store.id, user);
  const members = useResource(() => api.get(`/stores/${store.id}/members`, { limit: 200 }), [store.id]);
  const people = {};
  for (const m of members.data?.data || []) people[m.user_id] = m.email;
  people[user.id] = user.email;
  const id = parts[0] || '';
  const filters = { tab: query.get('tab') || 'open', q: query.get('q') || '', sort: query.get('sort') || '' };
  const s = rt.status;
  const x = { rt, people, filters, id, user, store };
  return html`<section class=${`inbox${id ? ' has-thread' : ''}`}>
    <div class="page-head">
      <h1 tabindex="-1">${w('title')}</h1>
      <div class="actions row">
        ${s === 'live' && rt.online.length > 0 &&
        html`<p class="muted small" id="inbox-team">${w('team_online', {
          names: [w('you'), ...rt.online.filter((u) => u !== user.id).map((u) => short(people[u]))].join(', '),
        })}</p>`}
        <p class=${`row small conn-${s}`} role="status" id="inbox-conn"><span class="conn-dot" aria-hidden="true"></span>${w(s)}</p>
        ${s === 'stopped' && html`<button type="button" class="btn" id="inbox-reconnect" onClick=${rt.retry}>${w('reconnect')}</button>`}
      </div>
    </div>
    <div class="inbox-panes">
      <${ConversationList} ...${x} />
      <div class="card thread-pane">
        ${id ? html`<${Thread} key=${id} ...${x} />` : html`<p class="empty">${w('pick')}</p>`}
      </div>
    </div>
  </section>`;
}

function ConversationList({ rt, id, filters, people, user, store }) {
  const { tab, q, sort } = filters;
  const path = `/stores/${store.id}/conversations`;
  const params = { ...tabParams(tab), search: q, sort, limit: 25 };
  const list = useResource(() => api.get(path, params), [JSON.stringify(params)]);
  const rows = list.data?.data || [];
  const setRows = (fn) => list.setData((p) => p && { ...p, data: fn(p.data, p.has_more) });
  const counts = useResource(() => api.get(`${path}/counts`), [store.id]);
  const [more, moreBusy, moreError] = useAction(async () => {
    const p = await api.get(path, { ...params, cursor: list.data.next_cursor });
    list.setData((o) => ({ ...p, data: [...o.data, ...p.data.filter((r) => !o.data.some((x) => x.id === r.id))] }));
  });
  const [text, setText] = useState(q);
  useEffect(() => setText(q), [q]);

  // The handler reads the newest state through a ref.
  const now = useRef();
  now.current = { tab, q, sort, people, rows, open: id };
  useEffect(() => {
    let timer;
    const fits = (row) => inTab(row, now.current.tab, user.id);
    const off = rt.subscribe((f) => {
      const c = now.current;
      const d = f.data || {};
      if (f.type === 'catchup') {
        list.reload();
        counts.reload();
      } else if (f.type === 'conversation:new' || f.type === 'conversation:updated') {
        clearTimeout(timer);
        timer = setTimeout(counts.reload, 400);
        const had = c.rows.find((r) => r.id === d.id);
        if (had) {
          const row = mergeConv(had, d, c.people);
          setRows((l) => (fits(row) || row.id === c.open ? placeRow(l, row, c.sort) : l.filter((r) => r.id !== row.id)));
        } else if (!c.q && fits(d)) {
          // The bare conversation lacks the display name.
          (d.display_name ? Promise.resolve(d) : api.get(`${path}/${d.id}`).catch(() => null)).then((row) => {
            if (!row || !fits(row)) return;
            const { notes, ...rest } = row;
            setRows((l, next) => placeRow(l, rest, now.current.sort, next));
          });
        }
      } else if (f.type === 'message:new') {
        setRows((l) => {
          const had = l.find((r) => r.id === d.conversation_id);
          return had ? placeRow(l, { ...had, last_message_at: d.created_at }, c.sort) : l;
        });
      }
    });
    return () => {
      off();
      clearTimeout(timer);
    };
  }, [list.reload]);

  const go = (next) => href(`/inbox${id ? `/${id}` : ''}`, { ...filters, ...next });
  return html`<div class="card list-pane">
    <nav class="tabs" aria-label=${w('tabs')}>${TABS.map((k) => html`<a href=${go({ tab: k })} id=${`inbox-tab-${k}`}
      aria-current=${k === tab ? 'page' : undefined}>${w(`tab.${k}`)} <span class="badge muted">${counts.data?.[k] ?? '…'}</span></a>`)}
    </nav>
    <${ErrorNote} error=${counts.error} onRetry=${counts.reload} />
    <form class="inbox-search" role="search" onSubmit=${(e) => {
      e.preventDefault();
      location.hash = go({ q: e.currentTarget.elements[0].value.trim() });
    }}>
      <label class="sr-only" for="inbox-search">${w('search')}</label>
      <div class="row">
        <input id="inbox-search" type="search" class="grow-input" placeholder=${w('search_hint')}
          value=${text} onInput=${(e) => setText(e.target.value)} />
        <button type="submit" class="btn">${w('find')}</button>
      </div>
      <div class="row inbox-sort">
        <label for="inbox-sort" class="small">${w('sort')}</label>
        <select id="inbox-sort" value=${sort || SORTS[0]}
          onChange=${(e) => (location.hash = go({ sort: e.target.value === SORTS[0] ? '' : e.target.value }))}>
          ${SORTS.map((s) => html`<option value=${s}>${w(`sort.${s}`)}</option>`)}
        </select>
      </div>
    </form>
    <${Loading} res=${list} empty=${!list.loading && list.data?.data.length === 0 && w('none')}>
      <ul class="conv-list" id="inbox-list">${rows.map((r) => html`<li key=${r.id}><a class="conv-row"
        href=${href(`/inbox/${r.id}`, filters)} aria-current=${r.id === id ? 'page' : undefined} data-conversation-id=${r.id}>
        <span class="conv-top">
          <span class="conv-name">${rt.visitors[r.id] && html`<span class="online-dot" title=${w('online')}>
            <span class="sr-only">${w('online')}</span></span>`}${r.display_name}</span>
          <${Time} at=${r.last_message_at} relative />
        </span>
        <span class="conv-bottom">
          <span class="badge muted">${word('kind', r.channel_kind)}</span>
          ${r.priority && r.priority !== 'none' && html`<${Badge} value=${r.priority} tones=${PRIORITY_TONES} label=${word('priority', r.priority)} />`}
          <span class="muted small conv-assignee">${r.assignee_name ? short(r.assignee_name) : w('tab.unassigned')}</span>
          ${rt.typing[r.id] && html`<span class="small conv-typing">${w('typing_short')}</span>`}
          ${r.unread_for_agents > 0 && html`<span class="count" title=${w('unread', { n: r.unread_for_agents })}>
            ${r.unread_for_agents}<span class="sr-only"> ${w('unread', { n: '' })}</span></span>`}
        </span>
      </a></li>`)}</ul>
      ${list.data?.has_more && html`<div class="inbox-more">
        <${ErrorNote} error=${moreError} />
        <button type="button" class="btn wide" id="inbox-more" disabled=${moreBusy} onClick=${more}>${w('more')}</button>
      </div>`}
    <//>
  </div>`;
}

// Under the default order a row goes where its last activity puts it (not past the loaded end).
function placeRow(rows, row, sort, more) {
  const old = rows.findIndex((r) => r.id === row.id);
  if (sort && sort !== SORTS[0]) return old < 0 ? [...rows, row] : rows.map((r) => (r.id === row.id ? row : r));
  const rest = rows.filter((r) => r.id !== row.id);
  const at = rest.findIndex((r) => when(r.last_message_at) < when(row.last_message_at));
  if (at < 0 && more && old < 0) return rest;
  rest.splice(at < 0 ? rest.length : at, 0, row);
  return rest;
}

function Thread({ id, rt, people, filters, user, store }) {
  const base = `/stores/${store.id}/conversations/${id}`;
  const conv = useResource(() => api.get(base), [id]);
  const c = conv.data;
  const patch = (fn) => conv.setData((x) => x && { ...x, ...fn(x) });
  const getMsgs = (q) => api.get(`${base}/messages`, { limit: 50, ...q });
  const res = useResource(() => getMsgs().then((p) => ({ list: mergeById([], p.data), older: cur(p) })), [id]);
  const msgs = res.data || {};
  const setMsgs = (fn) => res.setData((s) => ({ ...s, ...fn(s || {}) }));
  const setList = (fn) => setMsgs((s) => ({ list: fn(s.list) }));
  const [readError, setReadError] = useState(null);
  const r = useRef({ stick: true }).current;
  r.last = msgs.list?.[msgs.list.length - 1]?.id;
  r.people = people;

  const markRead = (delay = 0) => {
    clearTimeout(r.read);
    r.read = setTimeout(() => api.post(`${base}/read`)
      .then(() => patch(() => ({ unread_for_agents: 0 })), (e) => e.status !== 403 && setReadError(e)), delay);
  };
  // Spec 6.4: messages after the last one held, following the cursor; then the conversation.
  const catchUp = async () => {
    const after = r.last;
    if (!after) return res.reload();
    try {
      let cursor;
      do {
        const p = await getMsgs({ after, limit: 100, cursor });
        setList((l) => mergeById(l, p.data));
        cursor = cur(p);
      } while (cursor);
    } catch (error) {
      setMsgs(() => ({ error }));
    }
    conv.reload();
  };

  useEffect(() => {
    markRead();
    rt.view(id);
    // Messages that came while the tab was hidden are read when it shows again.
    const shown = () => visible() && markRead();
    document.addEventListener('visibilitychange', shown);
    const off = rt.subscribe((f) => {
      const d = f.data || {};
      const type = f.type;
      if (type === 'catchup') return catchUp();
      if (type === 'conversation:updated') return d.id === id && conv.setData((x) => x && mergeConv(x, d, r.people));
      if (d.conversation_id !== id) return;
      if (type === 'message:new' || type === 'message:updated') {
        setList((l) => mergeById(l, [d]));
        if (type === 'message:updated') return;
        // The conversation waits from a contact's message until the team answers.
        if (d.sender === 'agent') patch(() => ({ waiting_since: null }));
        if (d.sender === 'visitor') {
          patch((x) => ({ waiting_since: x.waiting_since || d.created_at }));
          if (visible()) markRead(800);
        }
      } else if (type === 'messages:read') {
        const at = new Date().toISOString();
        setList((l) => l?.map((m) => (m.sender !== 'visitor' && !m.read_at ? { ...m, read_at: at } : m)));
      } else if (type === 'note:new') patch((x) => ({ notes: mergeById(x.notes, [d]) }));
    });
    return () => {
      off();
      clearTimeout(r.read);
      document.removeEventListener('visibilitychange', shown);
      rt.view(null);
    };
  }, []);

  const [older, olderBusy, olderError] = useAction(async () => {
    const p = await getMsgs({ cursor: msgs.older });
    r.keep = r.log.scrollHeight - r.log.scrollTop;
    setMsgs((s) => ({ list: mergeById(s.list, p.data), older: cur(p) }));
  });

  // At the bottom unless the reader scrolled up; kept in place when earlier messages come;
  // the observer follows images that load later.
  const scroll = () => {
    const el = r.log;
    if (el && r.keep != null) el.scrollTop = el.scrollHeight - r.keep;
    else if (el && r.stick) el.scrollTop = el.scrollHeight;
  };
  useEffect(() => {
    scroll();
    r.keep = null;
  }, [msgs.list, c?.notes]);
  useEffect(() => {
    if (!r.ol) return;
    const ro = new ResizeObserver(() => r.keep == null && scroll());
    ro.observe(r.ol);
    return () => ro.disconnect();
  }, [!!c]);

  const back = html`<a class="crumb inbox-back" href=${href('/inbox', filters)}>← ${w('back')}</a>`;
  if (!c) return html`<div class="thread">${back}<${Loading} res=${conv} /></div>`;
  const list = msgs.list || [];
  const oldest = list[0]?.created_at;
  // Notes older than the loaded messages wait for "Show earlier messages".
  const notes = (c.notes || []).filter((n) => !msgs.older || !oldest || when(n.created_at) >= when(oldest));
  const timeline = [...list, ...notes.map((n) => ({ ...n, note: true }))].sort(byTime);
  const viewers = Object.entries(rt.viewers)
    .filter(([uid, v]) => v.conv === id && rt.online.includes(uid))
    .map(([uid, v]) => short(v.name || people[uid]));
  const typing = rt.typing[id];
  const meta = [
    word('kind', c.channel_kind),
    c.contact?.email,
    c.contact?.phone,
    c.customer_id && html`<a href=${`#/customers/${c.customer_id}`}>${w('customer')}</a>`,
    c.waiting_since && w('waiting', { at: dateTime(c.waiting_since) }),
    c.status === 'snoozed' && c.snoozed_until && w('snoozed_until', { at: dateTime(c.snoozed_until) }),
  ].filter(Boolean);
  return html`<div class="thread">
    ${back}
    <div class="thread-head">
      <h2 id="inbox-thread-title" class="row">
        ${c.display_name}
        ${rt.visitors[id] && html` <span class="badge ok" id="inbox-visitor-online"><span class="online-dot" aria-hidden="true"></span> ${w('online')}</span>`}
        ${' '}<${Badge} value=${c.status} tones=${STATUS_TONES} label=${word('status', c.status)} />
      </h2>
      <p class="muted small">${meta.map((x, i) => [i ? ' · ' : '', x])}</p>
      ${viewers.length > 0 && html`<p class="small inbox-viewers" id="inbox-viewers">${w('viewing', { names: viewers.join(', ') })}</p>`}
    </div>
    <${ThreadTools} c=${c} base=${base} people=${people} user=${user} onChange=${(x) => conv.setData((o) => mergeConv(o, x, people))} />
    <${ErrorNote} error=${readError} />
    <${ErrorNote} error=${conv.error} onRetry=${conv.reload} />
    <${ErrorNote} error=${res.error || msgs.error} onRetry=${res.reload} />
    <div class="thread-log" ref=${(el) => (r.log = el)} role="log" tabindex="0" aria-labelledby="inbox-thread-title"
      onScroll=${({ currentTarget: el }) => (r.stick = el.scrollHeight - el.scrollTop - el.clientHeight < 80)}>
      ${msgs.older && html`<div class="thread-older">
        <${ErrorNote} error=${olderError} />
        <button type="button" class="btn" id="inbox-older" disabled=${olderBusy} onClick=${older}>${w('older')}</button>
      </div>`}
      ${!res.data && !res.error && html`<p class="muted" role="status">${t('ui.loading')}</p>`}
      ${msgs.list && timeline.length === 0 && html`<p class="empty">${w('no_messages')}</p>`}
      <ol class="msgs" id="inbox-thread" ref=${(el) => (r.ol = el)}>
        ${timeline.map((m) => html`<${Message} key=${m.note ? `n${m.id}` : m.id} m=${m} c=${c} people=${people} me=${user.id} />`)}
      </ol>
    </div>
    <p class="typing-line small muted" aria-live="polite" id="inbox-typing">${typing &&
      w('typing', { name: typing.from === 'visitor' ? c.display_name : short(people[typing.user_id]) })}</p>
    <${Composer} c=${c} base=${base} rt=${rt} onDone=${(x, note) => {
      r.stick = true;
      if (note) return patch((o) => ({ notes: mergeById(o.notes, [x]) }));
      setList((l) => mergeById(l, [x.message]));
      conv.setData((o) => ({ ...mergeConv(o, x.conversation, people), waiting_since: null }));
    }} />
  </div>`;
}

function Message({ m, c, people, me }) {
  const s = m.sender;
  const who = (u) => (u === me ? w('me') : short(people[u]));
  const tick = m.delivery_status === 'failed' || !m.read_at ? m.delivery_status : 'read';
  const meta = (name) => html`<div class="row msg-meta small"><span class="msg-who">${name}</span><${Time} at=${m.created_at} /></div>`;
  if (m.note) {
    return html`<li class="msg msg-note" data-note-id=${m.id}>
      ${meta(`${w('note')} · ${who(m.author_user_id)}`)}<p class="msg-text">${m.text}</p>
    </li>`;
  }
  return html`<li class=${`msg msg-${['visitor', 'agent', 'bot'].includes(s) ? s : 'system'}`} data-message-id=${m.id} data-sender=${s}>
    ${meta(s === 'visitor' ? c.display_name || w('from.visitor') : s === 'agent' && m.agent_user_id ? who(m.agent_user_id) : word('from', s))}
    ${m.text && html`<p class="msg-text">${m.text}</p>`}
    ${m.attachments?.length > 0 && html`<ul class="msg-files">${m.attachments.map((a) => html`<li><${Attachment} a=${a} /></li>`)}</ul>`}
    ${s === 'visitor' || s === 'system' ? null
      : tick === 'failed'
        ? html`<p class="msg-failed small" data-delivery="failed">✕ ${w('tick.failed')}${m.delivery_error ? `: ${m.delivery_error}` : ''}</p>`
        : html`<p class=${`ticks small tick-${tick}`} data-delivery=${tick}>
          <span aria-hidden="true">${tick === 'sent' ? '✓' : '✓✓'}</span> ${word('tick', tick)}</p>`}
  </li>`;
}

// Fetched with the Authorization header.
function Attachment({ a }) {
  const [url, setUrl] = useState(null);
  const path = a.path.replace(/^\/v1(?=\/)/, '');
  const name = a.name || `${w('attachment')} ${a.index + 1}`;
  const [open, , error, setError] = useAction(async () => {
    const u = url || (await api.blobUrl(path));
    setUrl(u);
    Object.assign(document.createElement('a'), { href: u, download: name }).click();
  });
  const image = a.kind === 'image' || /^image\//.test(a.mime_type);
  useEffect(() => {
    let made;
    if (image) api.blobUrl(path).then((u) => setUrl((made = u)), setError);
    return () => made && URL.revokeObjectURL(made);
  }, [path]);
  return html`<span>
    ${image && url && html`<img class="msg-image" src=${url} alt=${name} />`}
    <button type="button" class="link" onClick=${open}>📎 ${name}${a.size ? ` (${Math.max(1, Math.round(a.size / 1024))} KB)` : ''}</button>
    <${ErrorNote} error=${error} />
  </span>`;
}

function ThreadTools({ c, base, people, user, onChange }) {
  const [snoozing, setSnoozing] = useState(false);
  const [preset, setPreset] = useState('1h');
  const [at, setAt] = useState('');
  const [bad, setBad] = useState(false);
  const [patch, busy, error] = useAction(async (body) => {
    onChange(await api.patch(base, body));
    setSnoozing(false);
  });
  const snooze = () => {
    const hours = { '1h': 1, '4h': 4, '1d': 24, '7d': 168 }[preset];
    const until = hours ? new Date(Date.now() + hours * 3600_000).toISOString() : zoneToIso(at);
    const past = !until || Date.parse(until) <= Date.now();
    setBad(past);
    if (!past) patch({ status: 'snoozed', snoozed_until: until });
  };
  // `opts`: [[value, label]], or an enum's values (an unknown current value listed raw).
  const pick = (id, label, value, opts, set, enumKey) => html`<div class="field">
    <label for=${id}>${label}</label>
    <select id=${id} disabled=${busy} value=${value} onChange=${(e) => set(e.target.value)}>
      ${(enumKey ? (opts.includes(value) ? opts : [value, ...opts]).map((v) => [v, word(enumKey, v)]) : opts)
        .map(([v, l]) => html`<option value=${v}>${l}</option>`)}
    </select>
  </div>`;
  const a = c.assignee_user_id;
  const assignees = { ...people, ...(a && !people[a] && { [a]: c.assignee_name || a }) };
  return html`<div class="thread-tools">
    <${ErrorNote} error=${error} />
    <div class="toolbar">
      ${pick('inbox-status', w('status'), snoozing ? 'snoozed' : c.status, ['open', 'pending', 'snoozed', 'resolved'], (v) => {
        setSnoozing(v === 'snoozed');
        if (v !== 'snoozed' && v !== c.status) patch({ status: v });
      }, 'status')}
      ${pick('inbox-assign', w('assignee'), c.assignee_user_id || '', [
        ['', w('tab.unassigned')],
        ...Object.entries(assignees).map(([uid, email]) => [uid, uid === user.id ? `${email} (${w('you')})` : email]),
      ], (v) => patch({ assignee_user_id: v || null }))}
      ${pick('inbox-priority', w('priority'), c.priority, ['none', 'low', 'medium', 'high', 'urgent'],
        (v) => patch({ priority: v }), 'priority')}
      ${c.assignee_user_id !== user.id && html`<button type="button" class="btn" id="inbox-assign-me" disabled=${busy}
        onClick=${() => patch({ assignee_user_id: user.id })}>${w('assign_me')}</button>`}
    </div>
    ${snoozing && html`<form class="toolbar snooze" onSubmit=${submit(snooze)}>
      ${pick('inbox-snooze-preset', w('snooze_for'), preset,
        ['1h', '4h', '1d', '7d', 'custom'].map((p) => [p, w(`snooze.${p}`)]), setPreset)}
      ${preset === 'custom' && html`<div class="field">
        <label for="inbox-snooze-at">${w('snooze_at', { zone: getZone() })}</label>
        <input id="inbox-snooze-at" type="datetime-local" value=${at} aria-invalid=${bad ? 'true' : undefined}
          onInput=${(e) => (setAt(e.target.value), setBad(false))} />
      </div>`}
      <button type="submit" class="btn primary" id="inbox-snooze" disabled=${busy}>${w('snooze')}</button>
      <button type="button" class="btn" onClick=${() => setSnoozing(false)}>${t('ui.cancel')}</button>
      ${bad && html`<p class="field-error" role="alert">${w('snooze_bad')}</p>`}
    </form>`}
  </div>`;
}

// Typing frames: at most one every 3 s.
function Composer({ c, base, rt, onDone }) {
  const [draft, setDraft] = useState('');
  const files = useRef(null);
  const ty = useRef({}).current;
  const stopTyping = () => {
    clearTimeout(ty.timer);
    if (ty.on) rt.sendTyping(c.id, false);
    ty.on = false;
  };
  useEffect(() => stopTyping, []);
  const onInput = (e) => {
    const v = e.target.value;
    setDraft(v);
    if (!v.trim()) return stopTyping();
    if (!ty.on || Date.now() - ty.at > 3000) {
      rt.sendTyping(c.id, true);
      ty.on = true;
      ty.at = Date.now();
    }
    clearTimeout(ty.timer);
    ty.timer = setTimeout(stopTyping, 4000);
  };
  const [send, busy, error] = useAction(async (asNote) => {
    const text = draft.trim();
    const picked = asNote ? [] : [...files.current.files];
    if (!text && !picked.length) throw Object.assign(new Error(''), { code: 'empty_message' });
    let r;
    if (asNote) r = await api.post(`${base}/notes`, { text });
    else {
      const form = new FormData();
      form.append('text', text);
      for (const f of picked) form.append('files', f, f.name);
      r = await api.postForm(`${base}/messages`, form);
      files.current.value = '';
    }
    stopTyping();
    setDraft('');
    onDone(r, asNote);
  });
  const windowAt = c.channel_kind === 'msgapp' && c.reply_window_expires_at;
  const closed = windowAt && Date.parse(windowAt) <= Date.now();
  return html`<form class="composer" onSubmit=${submit(send)}>
    ${windowAt && html`<p class=${closed ? 'note warn small' : 'muted small'}>
      ${w(closed ? 'window_closed' : 'window_open', { at: dateTime(windowAt) })}</p>`}
    <${ErrorNote} error=${error} />
    <div class="row composer-top">
      <label for="inbox-reply">${w('reply')}</label>
      <span class="hint" id="inbox-reply-hint">${w('reply_hint')}</span>
    </div>
    <textarea id="inbox-reply" rows="2" maxlength="4096" value=${draft} aria-describedby="inbox-reply-hint" onInput=${onInput}
      onKeyDown=${(e) => e.key === 'Enter' && !e.shiftKey && !e.isComposing && (e.preventDefault(), send())}></textarea>
    <div class="row composer-actions">
      <div class="composer-files">
        <label for="inbox-files" class="small">${w('files')}</label>
        <input id="inbox-files" type="file" multiple ref=${files} />
      </div>
      <div class="row">
        <button type="button" class="btn" id="inbox-note" disabled=${busy} onClick=${() => send(true)}>${w('add_note')}</button>
        <button type="submit" class="btn primary" id="inbox-send" disabled=${busy}>${w('send')}</button>
      </div>
    </div>
  </form>`;
}
