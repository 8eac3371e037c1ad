import { html, render } from './lib.js';
import { App } from './app.js';

const root = document.getElementById('app');
// Preact renders beside existing children: drop the loading line first.
root.textContent = '';
render(html`<${App} />`, root);
