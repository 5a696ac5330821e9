#!/usr/bin/env bash
# Makes a throwaway PKI for the FAKE Kubernetes API server's TLS tests in
# DIR: ca.crt/ca.key (a test CA), server.crt/server.key (SANs 127.0.0.1,
# ::1, localhost, fake-apiserver.test) and client.crt/client.key
# (CN=gantry-scheduler, O=gantry), all signed by the CA; and other-ca.crt, a
# second CA, with other-client.crt/.key (the same subject, signed by it) for
# the refusals of a certificate from the wrong CA. EC P-256 keys: fast.
# Nothing here is a real credential; the caller deletes DIR.
set -euo pipefail
dir=${1:?usage: make_test_pki.sh DIR}
mkdir -p "$dir"
cd "$dir"
key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; }

ca() { # name subject
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -sha256 -days 2 -subj "$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$1.crt" 2>/dev/null
}
ca ca "/CN=gantry-test-ca"
ca other-ca "/CN=gantry-test-ca"

sign() { # name subject extensions [ca]
  local signer=${4:-ca}
  key "$1.key"
  openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
  printf '%s\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$signer.crt" -CAkey "$signer.key" -CAcreateserial -days 2 \
    -sha256 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
sign server "/CN=fake-apiserver" \
  "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost,DNS:fake-apiserver.test
extendedKeyUsage=serverAuth"
sign client "/O=gantry/CN=gantry-scheduler" "extendedKeyUsage=clientAuth"
sign other-client "/O=gantry/CN=gantry-scheduler" "extendedKeyUsage=clientAuth" other-ca
rm -f ca.srl other-ca.srl
