// Settings: a section menu (a list beside the page; a select on phones) and one module per
// section under ./settings/. #/settings opens the store section.

import { html } from '../lib.js';
import { navigate } from '../app.js';
import { words } from './settings/common.js';
import { StoreSettings } from './settings/store.js';
import { TeamSettings } from './settings/team.js';
import { TokenSettings } from './settings/tokens.js';
import { WebhookSettings } from './settings/webhooks.js';
import { ChannelSettings } from './settings/channels.js';
import { BillingSettings } from './settings/billing.js';
import { AssistantSettings } from './settings/assistant.js';
import { AccountSettings } from './settings/account.js';

const T = words('nav', `
title|Settings|Configurações
sections|Settings sections|Seções das configurações
section|Section|Seção
store|Store|Loja
team|Team|Equipe
tokens|API tokens|Tokens de API
webhooks|Webhooks
channels|Channels|Canais
billing|Plan and billing|Plano e cobrança
assistant|Assistant|Assistente
account|My account|Minha conta`);

const SECTIONS = {
  store: StoreSettings,
  team: TeamSettings,
  tokens: TokenSettings,
  webhooks: WebhookSettings,
  channels: ChannelSettings,
  billing: BillingSettings,
  assistant: AssistantSettings,
  account: AccountSettings,
};
const KEYS = Object.keys(SECTIONS);

export function Settings({ parts, query }) {
  const section = SECTIONS[parts[0]] ? parts[0] : 'store';
  const Section = SECTIONS[section];
  return html`<div class="settings">
    <nav class="settings-nav" aria-label=${T('sections')}>
      <p class="settings-eyebrow muted small" aria-hidden="true">${T('title')}</p>
      <ul>
        ${KEYS.map((k) => html`<li><a href=${`#/settings/${k}`} id=${`settings-nav-${k}`} aria-current=${k === section ? 'page' : undefined}>${T(k)}</a></li>`)}
      </ul>
    </nav>
    <div class="settings-pick field">
      <label for="settings-section">${T('title')} · ${T('section')}</label>
      <select id="settings-section" value=${section} onChange=${(e) => navigate(`/settings/${e.target.value}`)}>
        ${KEYS.map((k) => html`<option value=${k}>${T(k)}</option>`)}
      </select>
    </div>
    <div class="settings-body"><${Section} parts=${parts.slice(1)} query=${query} /></div>
  </div>`;
}
