// The sign-in, consent and enrolment pages, in the site's one page shell (lib/page.ts: its style,
// header and footer), with a few style rules of their own: plain forms that work without
// JavaScript; only the passkey buttons need the small script /oauth/passkey.js. Every value is
// escaped (lib/html.ts).

import { escapeHtml as e } from '../../lib/html.js'
import { page, type Site } from '../../lib/page.js'
import { ENROL_DAYS } from './enrolments.js'

let site: Site = { name: 'Studio', tagline: '', icon: '/favicon.ico' }

/** The site whose shell the pages use (the staff plugin sets app.site, which the catalogue names). */
export function setSite(theSite: Site): void {
  site = theSite
}

/** What the sign-in pages add to the shell's head: no Referer (a link's token stays here), their boxes, the passkey script. */
const STAFF_HEAD = `<meta name="referrer" content="no-referrer">
<style>
.box{background:#fff;border:1px solid var(--line);border-radius:8px;padding:1.25rem 1.5rem;max-width:34rem}
.actions{display:flex;gap:.75rem;flex-wrap:wrap}
button.secondary{background:#fff;color:var(--accent);border:1px solid var(--accent)}
</style>`

function layout(title: string, body: string, script = false): string {
  return page(site, title, body, script ? `${STAFF_HEAD}\n<script src="/oauth/passkey.js" defer></script>` : STAFF_HEAD)
}

export interface FormContext {
  /** The interaction's path, /oauth/sign-in/{uid}. */
  action: string
  csrf: string
  /** Who is asking: the client's verified host, or its self-given name. */
  client: string
}

const hidden = (csrf: string) => `<input type="hidden" name="csrf" value="${e(csrf)}">`

export function emailPage(f: FormContext, message?: string, passkeys = true): string {
  return layout(
    'Sign in',
    `<div class="box"><h1>Sign in</h1>
<p class="meta">${e(f.client)} asks to use your studio account.</p>
<form method="post" action="${e(f.action)}/email">${hidden(f.csrf)}
<label>Your work email<input type="email" name="email" autocomplete="email" required maxlength="254"></label>
<button type="submit">Email me a code</button>
${message ? `<p role="alert">${e(message)}</p>` : ''}
</form>
${
  passkeys
    ? `<form method="post" action="${e(f.action)}/passkey" id="passkey-sign-in" hidden>${hidden(f.csrf)}
<input type="hidden" name="response">
<p class="meta">Or, on a device where you added one:</p>
<button type="submit" class="secondary">Sign in with a passkey</button>
</form>`
    : ''
}</div>`,
    passkeys,
  )
}

export function codePage(f: FormContext, codeId: string, message?: string): string {
  return layout(
    'Enter your code',
    `<div class="box"><h1>Check your email</h1>
<p class="meta">If this address belongs to the studio's staff, a 6-digit code is on its way. It works once, for 10 minutes.</p>
<form method="post" action="${e(f.action)}/code">${hidden(f.csrf)}
<input type="hidden" name="cid" value="${e(codeId)}">
<label>Code<input type="text" name="code" autocomplete="one-time-code" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" required></label>
<button type="submit">Sign in</button>
${message ? `<p role="alert">${e(message)}</p>` : ''}
</form>
<p class="meta"><a href="${e(f.action)}">Ask for another code</a></p></div>`,
  )
}

/** Plain words for each scope. */
const SCOPE_WORDS: Record<string, string> = {
  'read:leads':
    'read the studio’s leads: the names, email addresses, phone numbers and messages of the people who asked for a consultation',
}

export interface ConsentView extends FormContext {
  /** The signed-in person's address. */
  who: string
  redirectHost: string
  scopes: string[]
  /** Whether the client's identity was checked (a client id metadata document fetched from its host). */
  verified: boolean
  passkeyOffer: boolean
  /** A line about what just happened (a passkey added). */
  notice?: string
}

export function consentPage(v: ConsentView): string {
  const scopes = v.scopes.map((s) => `<li>${e(SCOPE_WORDS[s] ?? s)}</li>`).join('')
  return layout(
    'Allow access?',
    `<div class="box"><h1>Allow access?</h1>
<p><strong>${e(v.client)}</strong>${v.verified ? '' : ' (a name the application gave itself, not verified)'} asks to:</p>
<ul>${scopes || '<li>confirm who you are</li>'}</ul>
${v.notice ? `<p role="status">${e(v.notice)}</p>` : ''}
<p class="meta">You are signed in as ${e(v.who)}. After you allow it, you are sent back to <strong>${e(v.redirectHost)}</strong>.</p>
<form method="post" action="${e(v.action)}/consent">${hidden(v.csrf)}
<div class="actions"><button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button></div>
</form>
${
  v.passkeyOffer
    ? `<form method="post" action="${e(v.action)}/passkey-add" id="passkey-add" hidden>${hidden(v.csrf)}
<input type="hidden" name="response">
<p class="meta">Sign in faster next time on this device:</p>
<button type="submit" class="secondary">Add a passkey</button>
<p role="status"></p>
</form>`
    : ''
}</div>`,
    v.passkeyOffer,
  )
}

export function errorPage(title: string, detail: string): string {
  return layout(
    'Sign-in stopped',
    `<div class="box"><h1>Sign-in stopped</h1><p>${e(title)}</p>${detail ? `<p class="meta">${e(detail)}</p>` : ''}</div>`,
  )
}

/** What an enrolment page shows and where its form posts. */
export interface EnrolView {
  /** The enrolment link's path, /oauth/enrol/{token}. */
  action: string
  email: string
  name: string | null
  message?: string
}

/** The page of a one-time enrolment link: who it enrols, and the passkey button (enrol.ts). */
export function enrolPage(v: EnrolView): string {
  const who = v.name ? `${e(v.name)} (${e(v.email)})` : e(v.email)
  return layout(
    'Add a passkey',
    `<div class="box"><h1>Add a passkey</h1>
<p>This link enrols <strong>${who}</strong> as the studio's staff: add a passkey on this device, and sign in with it from Claude, ChatGPT or any assistant you connect.</p>
<p class="meta">The link works once. Opening it again before you add the passkey is fine.</p>
${v.message ? `<p role="alert">${e(v.message)}</p>` : ''}
<noscript><p role="alert">Adding a passkey needs JavaScript: turn it on for this page.</p></noscript>
<form method="post" action="${e(v.action)}/passkey" id="passkey-enrol" data-failed="The passkey could not be added on this device. Try again, or use another device." hidden>
<input type="hidden" name="response">
<button type="submit">Add a passkey on this device</button>
<p role="status"></p>
</form></div>`,
    true,
  )
}

/** After an enrolment: the passkey is added, and how to connect an assistant. */
export function enrolledPage(base: string): string {
  return layout(
    'Passkey added',
    `<div class="box"><h1>Passkey added</h1>
<p>From now on, sign in with <strong>Sign in with a passkey</strong> on the studio's sign-in page, on this device.</p>
<h2>Connect your assistant</h2>
<ul>
<li><strong>Claude</strong>: Settings → Connectors → Add custom connector, and paste <code>${e(base)}/mcp?signin</code>. Leave the OAuth client fields empty.</li>
<li><strong>ChatGPT</strong>: in developer mode, Create app, paste <code>${e(base)}/mcp</code> and choose OAuth. Leave the client id and secret empty.</li>
</ul>
<p class="meta">The assistant opens the studio's sign-in page: choose <strong>Sign in with a passkey</strong>, then <strong>Allow</strong>.</p></div>`,
  )
}

/** Every link that cannot be used (unknown, used, expired, its person removed): one answer. */
export function enrolRefusedPage(): string {
  return layout(
    'Link not valid',
    `<div class="box"><h1>This link cannot be used</h1>
<p>Enrolment links work once, for ${ENROL_DAYS} days. This one is not valid (any more).</p>
<p class="meta">Ask the studio's operator for a new link: <code>npm run staff -- enrol --email …</code> with your work address.</p></div>`,
  )
}
