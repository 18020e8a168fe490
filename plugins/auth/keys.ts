// The token signing key (Ed25519): from configuration, or generated once into the data folder
// so tokens survive a restart. Its public half is published as a JWK with an RFC 7638 kid, and
// the database keeps that kid, so that every instance on it signs with the same key.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import type { Kysely } from 'kysely'
import { ConfigError } from '../../config.js'
import type { Database } from '../store/schema.js'
import { checkedKey, configuredKey, forgetCheck } from './secrets.js'

export interface SigningKey {
  privatePem: string
  publicPem: string
  kid: string
  jwk: { kty: string; crv: string; x: string; kid: string; alg: 'EdDSA'; use: 'sig' }
}

/** The key in this PEM text; `source` names where it came from, for the errors. */
export function signingKeyFrom(privatePem: string, source = 'JWT_PRIVATE_KEY'): SigningKey {
  let key: KeyObject
  try {
    key = createPrivateKey(privatePem)
  } catch {
    throw new ConfigError(`${source} is not a PEM private key; generate one with: openssl genpkey -algorithm ed25519`)
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new ConfigError(`${source} must be an Ed25519 key, not ${key.asymmetricKeyType}`)
  }
  const pub = createPublicKey(key)
  const { x } = pub.export({ format: 'jwk' }) as { x: string }
  // RFC 7638 thumbprint: members in lexicographic order, no spaces.
  const kid = createHash('sha256')
    .update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x }))
    .digest('base64url')
  return {
    privatePem: key.export({ format: 'pem', type: 'pkcs8' }).toString(),
    publicPem: pub.export({ format: 'pem', type: 'spki' }).toString(),
    kid,
    jwk: { kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'EdDSA', use: 'sig' },
  }
}

type KeyConfig = { dataDir: string; jwtPrivateKey: string | undefined }

const signingKeyOf = (config: KeyConfig) =>
  configuredKey('JWT_PRIVATE_KEY', config.jwtPrivateKey, config.dataDir, 'signing-key.pem', () =>
    generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  )

export function loadSigningKey(config: KeyConfig, mayCreate = true): SigningKey {
  const { source, load } = signingKeyOf(config)
  return signingKeyFrom(load(mayCreate), source)
}

const SIGNING_KEY_CHECK = 'signing-key'

const TO_CHANGE_IT =
  'To sign with another key on purpose: run `npm run clients -- forget-signing-key`, then start every instance with the ' +
  'new key (tokens signed with the old one are refused from then on: clients ask for new ones)'

/**
 * The signing key, checked against the database (secrets.ts checkedKey): the database keeps the
 * key's kid (its public thumbprint). Behind a load balancer, an instance signing with another key
 * (no JWT_PRIVATE_KEY on a second machine, which then makes its own; a key file lost and made
 * again) would have its tokens refused by every other instance, and theirs by it: invalid_token
 * at random. It refuses to start instead.
 */
export function databaseSigningKey(db: Kysely<Database>, config: KeyConfig): Promise<SigningKey> {
  const source = signingKeyOf(config).source
  return checkedKey(db, {
    name: SIGNING_KEY_CHECK,
    load: (create) => loadSigningKey(config, create),
    check: (key) => key.kid,
    missing:
      `${source} is missing, but this database's access tokens are signed with it: copy it back (or restore it ` +
      'with npm run restore), or set JWT_PRIVATE_KEY to the key it held, the same on every instance. ' +
      `A server started without it here would sign tokens the other instances refuse. ${TO_CHANGE_IT}.`,
    mismatch: (key, recorded) =>
      `${source} is not the key this database's access tokens are signed with (this key's kid is ${key.kid}, ` +
      `the database's ${recorded}): the other instances would refuse this one's tokens (invalid_token), and it theirs. ` +
      `Give every instance the same JWT_PRIVATE_KEY (or none, on the embedded default), or restore the key file. ${TO_CHANGE_IT}.`,
  })
}

/** Forgets the signing key's check (`clients forget-signing-key`): the next server records the key it has. */
export const forgetSigningKey = (db: Kysely<Database>): Promise<boolean> => forgetCheck(db, SIGNING_KEY_CHECK)
