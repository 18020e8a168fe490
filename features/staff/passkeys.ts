// Passkeys (WebAuthn, @simplewebauthn/server): after a first sign-in by code, the consent page
// offers to add one, and so does a one-time enrolment link (enrol.ts); later sign-ins use it from
// the sign-in page. The challenge of each ceremony is derived from the interaction or the
// enrolment (HMAC under the server's cookie key, the interaction's uid or `enrol:` and the
// enrolment's id, and the ceremony's purpose): it is the same on every instance without being
// stored, and it is used within that one sign-in (30 minutes at most) or enrolment (once). The
// relying party is PUBLIC_BASE_URL's host.
import { createHmac } from 'node:crypto'
import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server'
import type { Kysely } from 'kysely'
import type { Database } from '../../plugins/store/schema.js'
import type { StaffRow } from './accounts.js'

export type Purpose = 'register' | 'authenticate'

/** A verified passkey, before it is kept. */
export interface NewPasskey {
  id: string
  public_key: string
  counter: number
  transports: string | null
}

export class Passkeys {
  private readonly rpID: string
  private readonly origin: string

  constructor(
    private readonly db: Kysely<Database>,
    publicBaseUrl: string,
    private readonly key: string,
    private readonly rpName: string,
  ) {
    const url = new URL(publicBaseUrl)
    this.rpID = url.hostname
    this.origin = url.origin
  }

  challenge(uid: string, purpose: Purpose): string {
    return createHmac('sha256', this.key).update(`passkey:${purpose}:${uid}`).digest('base64url')
  }

  async has(staffId: string): Promise<boolean> {
    return (await this.db.selectFrom('staff_passkeys').select('id').where('staff_id', '=', staffId).executeTakeFirst()) !== undefined
  }

  async registrationOptions(uid: string, staff: StaffRow) {
    const existing = await this.db.selectFrom('staff_passkeys').select(['id', 'transports']).where('staff_id', '=', staff.id).execute()
    return generateRegistrationOptions({
      rpName: this.rpName,
      rpID: this.rpID,
      userName: staff.email,
      userDisplayName: staff.name ?? staff.email,
      userID: new TextEncoder().encode(staff.id),
      challenge: Buffer.from(this.challenge(uid, 'register'), 'base64url'),
      attestationType: 'none',
      excludeCredentials: existing.map((p) => ({ id: p.id, ...(p.transports && { transports: p.transports.split(' ') }) })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    })
  }

  /** Verifies and keeps a new passkey of this person; false when it does not verify. */
  async register(uid: string, staff: StaffRow, response: RegistrationResponseJSON): Promise<boolean> {
    const passkey = await this.verifyRegistration(uid, response)
    if (!passkey) return false
    await this.keep(staff.id, passkey)
    return true
  }

  /** The new passkey of a registration response that verifies for this ceremony, or undefined. */
  async verifyRegistration(uid: string, response: RegistrationResponseJSON): Promise<NewPasskey | undefined> {
    const result = await verifyRegistrationResponse({
      response,
      expectedChallenge: this.challenge(uid, 'register'),
      expectedOrigin: this.origin,
      expectedRPID: this.rpID,
      requireUserVerification: false,
    }).catch(() => undefined)
    if (!result?.verified) return undefined
    const { credential } = result.registrationInfo
    return {
      id: credential.id,
      public_key: Buffer.from(credential.publicKey).toString('base64url'),
      counter: credential.counter,
      transports: credential.transports?.join(' ') ?? null,
    }
  }

  /** Keeps a verified passkey of this person (within a transaction when `db` is one). */
  async keep(staffId: string, passkey: NewPasskey, db: Kysely<Database> = this.db): Promise<void> {
    await db
      .insertInto('staff_passkeys')
      .values({ ...passkey, staff_id: staffId, created_at: new Date().toISOString(), used_at: null })
      .execute()
  }

  authenticationOptions(uid: string) {
    return generateAuthenticationOptions({
      rpID: this.rpID,
      challenge: Buffer.from(this.challenge(uid, 'authenticate'), 'base64url'),
      userVerification: 'preferred',
    })
  }

  /** The staff id whose passkey signed this response, or undefined. */
  async authenticate(uid: string, response: AuthenticationResponseJSON): Promise<string | undefined> {
    const row = await this.db.selectFrom('staff_passkeys').selectAll().where('id', '=', String(response?.id)).executeTakeFirst()
    if (!row) return undefined
    const result = await verifyAuthenticationResponse({
      response,
      expectedChallenge: this.challenge(uid, 'authenticate'),
      expectedOrigin: this.origin,
      expectedRPID: this.rpID,
      credential: {
        id: row.id,
        publicKey: Buffer.from(row.public_key, 'base64url'),
        counter: row.counter,
        ...(row.transports && { transports: row.transports.split(' ') as never }),
      },
      requireUserVerification: false,
    }).catch(() => undefined)
    if (!result?.verified) return undefined
    await this.db
      .updateTable('staff_passkeys')
      .set({ counter: result.authenticationInfo.newCounter, used_at: new Date().toISOString() })
      .where('id', '=', row.id)
      .execute()
    return row.staff_id
  }
}

/** A ceremony's response as the passkey script posts it (a form field of JSON); {} when it is not JSON. */
export const parseResponse = (text: unknown): never => {
  try {
    return JSON.parse(String(text)) as never
  } catch {
    return {} as never
  }
}

/** The script of the passkey buttons (served at /oauth/passkey.js; the pages work without it, by code). */
export const PASSKEY_SCRIPT = `'use strict';
(() => {
  if (!window.PublicKeyCredential || !PublicKeyCredential.parseRequestOptionsFromJSON) return;
  const run = async (form, purpose) => {
    const status = form.querySelector('[role=status]');
    const res = await fetch(form.action.replace(/\\/passkey(-add)?$/, '/passkey-options?purpose=' + purpose), { credentials: 'same-origin' });
    if (!res.ok) throw new Error('options');
    const options = await res.json();
    const credential = purpose === 'register'
      ? await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options) })
      : await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options) });
    form.querySelector('input[name=response]').value = JSON.stringify(credential.toJSON());
    if (status) status.textContent = '';
    form.submit();
  };
  for (const [id, purpose] of [['passkey-sign-in', 'authenticate'], ['passkey-add', 'register'], ['passkey-enrol', 'register']]) {
    const form = document.getElementById(id);
    if (!form) continue;
    form.hidden = false;
    form.addEventListener('submit', (event) => {
      if (form.querySelector('input[name=response]').value) return;
      event.preventDefault();
      run(form, purpose).catch(() => {
        const status = form.querySelector('[role=status]');
        if (status) status.textContent = form.dataset.failed || 'The passkey did not work. Use the emailed code instead.';
      });
    });
  }
})();
`
