// The assistant's chat (spec 4.3, 6.5): turns stream as server-sent events; a proposed write
// waits for Approve or Decline, and a risky one asks again before `confirmed=true`.

import { html, useState, useEffect } from '../../lib.js';
import { api, stream } from '../../api.js';
import { useCtx } from '../../app.js';
import { ErrorNote } from '../../ui.js';
import { has } from '../../i18n.js';
import { words, submit } from './common.js';

const T = words('chat', `
title|Ask the assistant|Pergunte ao assistente
pick|Conversation|Conversa
new|New conversation|Nova conversa
ask|Message|Mensagem
hint|It reads the store and proposes changes: nothing changes until you approve.|Ele consulta a loja e propõe mudanças: nada muda antes da sua aprovação.
send|Send|Enviar
stop|Stop|Parar
working|Working…|Trabalhando…
approve|Approve|Aprovar
decline|Decline|Recusar
sure|This changes {risk}. Approve again to confirm.|Isto mexe com {risk}. Aprove de novo para confirmar.
risk_money|money|dinheiro
risk_destructive|data that cannot come back|dados que não voltam
risk_external|something outside the store|algo fora da loja
st_pending|Waiting for you|Aguardando você
st_applying|Applying…|Aplicando…
st_applied|Applied|Aplicado
st_declined|Declined|Recusado
st_failed|Not applied|Não aplicado
st_expired|Expired|Expirado
st_interrupted|Interrupted|Interrompido
stopped|Stopped.|Interrompido.`);

/** A transcript's messages as chat lines: what was said, and the proposals. */
const toLines = (messages) =>
  messages.flatMap((m) =>
    m.proposal
      ? [{ proposal: { ...m.proposal, proposal_id: m.proposal.id ?? m.proposal.proposal_id } }]
      : (m.role === 'user' || m.role === 'assistant') && m.content
        ? [{ who: m.role, text: m.content }]
        : [],
  );

export function AssistantChat() {
  const { store } = useCtx();
  const base = `/stores/${store.id}/assistant`;
  const [convs, setConvs] = useState([]);
  const [id, setId] = useState('');
  const [lines, setLines] = useState([]);
  const [text, setText] = useState('');
  const [running, setRunning] = useState(false);
  const [sure, setSure] = useState(null);
  const [error, setError] = useState(null);
  const list = () => api.get(`${base}/conversations`).then((p) => setConvs(p.data), setError);
  useEffect(() => {
    list();
  }, []);

  const open = async (cid) => {
    setSure(null);
    setId(cid);
    setLines([]);
    setError(null);
    if (cid) {
      try {
        let all = [];
        for (let cursor; ; ) {
          const p = await api.get(`${base}/conversations/${cid}/messages`, { limit: 200, cursor });
          all = all.concat(p.data);
          if (!p.has_more || !p.next_cursor) break;
          cursor = p.next_cursor;
        }
        setLines(toLines(all));
      } catch (e) {
        setError(e);
      }
    }
  };
  const mark = (pid, status, extra) =>
    setLines((ls) => ls.map((l) => (l.proposal?.proposal_id === pid ? { proposal: { ...l.proposal, status, ...extra } } : l)));

  // Runs one streamed turn (a chat, an approval, a decline) into the lines; true when it
  // was refused before it started (nothing happened: the caller puts its state back).
  const run = async (path, body) => {
    setRunning(true);
    setError(null);
    let started = false;
    try {
      await stream(path, body, (name, d) => {
        started = true;
        if (name === 'conversation') setId(d.conversation_id);
        else if (name === 'text')
          setLines((ls) => {
            const last = ls[ls.length - 1];
            return last?.live ? [...ls.slice(0, -1), { ...last, text: last.text + d.delta }] : [...ls, { who: 'assistant', text: d.delta, live: true }];
          });
        else if (name === 'proposal') setLines((ls) => [...ls, { proposal: { ...d, status: 'pending' } }]);
        else if (name === 'tool_result' && d.proposal_id) mark(d.proposal_id, d.applied ? 'applied' : 'failed', { error: d.error });
        else if (name === 'stopped') setLines((ls) => [...ls, { who: 'note', text: T('stopped') }]);
        else if (name === 'error') setError(d);
        if (name !== 'text') setLines((ls) => ls.map((l) => (l.live ? { ...l, live: false } : l)));
      });
    } catch (e) {
      setError(e);
    } finally {
      setRunning(false);
      list();
    }
    return !started;
  };

  const send = async () => {
    const message = text.trim();
    if (!message || running) return;
    const line = { who: 'user', text: message };
    setLines((ls) => [...ls, line]);
    setText('');
    if (await run(`${base}/chat`, id ? { message, conversation_id: id } : { message })) {
      setLines((ls) => ls.filter((l) => l !== line));
      setText(message);
    }
  };
  const approve = (p) => {
    const risky = p.risk && p.risk !== 'none';
    if (risky && sure !== p.proposal_id) return setSure(p.proposal_id);
    setSure(null);
    mark(p.proposal_id, 'applying');
    return decide(p, `approve${risky ? '?confirmed=true' : ''}`);
  };
  const decline = (p) => {
    setSure(null);
    mark(p.proposal_id, 'declined');
    decide(p, 'decline');
  };
  // A refused decision (expired, busy, no permission) leaves the proposal as it was.
  const decide = async (p, what) => {
    if (await run(`${base}/proposals/${p.proposal_id}/${what}`)) mark(p.proposal_id, p.status);
  };
  // Enum words, or the value itself when it is one this app does not know yet.
  const enumWord = (p, v) => (has(`settings.chat.${p}${v}`) ? T(`${p}${v}`) : v);

  return html`<div class="card chat" id="assistant-chat">
    <h2>${T('title')}</h2>
    <label class="label" for="chat-pick">${T('pick')}</label>
    <select id="chat-pick" value=${id} disabled=${running} onChange=${(e) => open(e.target.value)}>
      <option value="">${T('new')}</option>
      ${convs.map((c) => html`<option value=${c.id}>${c.name}</option>`)}
    </select>
    <ol class="chat-log" id="chat-log">
      ${lines.map((l) =>
        l.proposal
          ? html`<li class="msg proposal" data-proposal-id=${l.proposal.proposal_id}>
              <p>${l.proposal.summary}</p>
              <p class="muted small">${enumWord('st_', l.proposal.status)}${l.proposal.error ? `: ${l.proposal.error.message}` : ''}</p>
              ${sure === l.proposal.proposal_id && l.proposal.status === 'pending' &&
              html`<p class="note warn">${T('sure', { risk: enumWord('risk_', l.proposal.risk) })}</p>`}
              ${l.proposal.status === 'pending' &&
              html`<div class="row">
                <button type="button" class="btn primary" data-action="approve" disabled=${running} onClick=${() => approve(l.proposal)}>${T('approve')}</button>
                <button type="button" class="btn" data-action="decline" disabled=${running} onClick=${() => decline(l.proposal)}>${T('decline')}</button>
              </div>`}
            </li>`
          : html`<li class=${`msg ${l.who}`} data-who=${l.who}>${l.text}</li>`,
      )}
    </ol>
    <p class="muted small" role="status">${running ? T('working') : ''}</p>
    <${ErrorNote} error=${error} />
    <form onSubmit=${submit(send)}>
      <label class="label" for="chat-text">${T('ask')}</label>
      <textarea id="chat-text" rows="2" value=${text} aria-describedby="chat-hint" onInput=${(e) => setText(e.target.value)}
        onKeyDown=${(e) => e.key === 'Enter' && !e.shiftKey && (e.preventDefault(), send())}></textarea>
      <p class="hint" id="chat-hint">${T('hint')}</p>
      <div class="row">
        <button class="btn primary" id="chat-send" disabled=${running || !text.trim()}>${T('send')}</button>
        ${running && id && html`<button type="button" class="btn" onClick=${() => api.post(`${base}/conversations/${id}/stop`).catch(setError)}>${T('stop')}</button>`}
      </div>
    </form>
  </div>`;
}
