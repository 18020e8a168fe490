// The token signing key (Ed25519): from configuration, or generated once into the data folder
// so tokens survive a restart. Its public half is published as a JWK with an RFC 7638 kid.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { keptValue } from './secrets.js'

export interface SigningKey {
  privatePem: string
  publicPem: string
  kid: string
  jwk: { kty: string; crv: string; x: string; kid: string; alg: 'EdDSA'; use: 'sig' }
}

export function signingKeyFrom(privatePem: string): SigningKey {
  let key: KeyObject
  try {
    key = createPrivateKey(privatePem)
  } catch {
    throw new Error('JWT_PRIVATE_KEY is not a PEM private key; generate one with: openssl genpkey -algorithm ed25519')
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new Error(`JWT_PRIVATE_KEY must be an Ed25519 key, not ${key.asymmetricKeyType}`)
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

export function loadSigningKey(config: { dataDir: string; jwtPrivateKey: string | undefined }): SigningKey {
  const pem =
    config.jwtPrivateKey ??
    keptValue(config.dataDir, 'signing-key.pem', () =>
      generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    )
  return signingKeyFrom(pem)
}
