#!/bin/sh
# Makes throw-away TLS material for the RPC-over-TLS tests in directory $1:
#   ca.pem/ca.key          test CA
#   other-ca.pem           an unrelated CA (wrong-CA cases)
#   server.pem/server.key  signed by ca, names: DNS nfsedge-upstream, IP 127.0.0.1
#   client.pem/client.key  signed by ca (mutual TLS)
# Keys are made at test time and never checked in.
set -eu
d=$1
mkdir -p "$d"
cd "$d"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1" 2>/dev/null; }
key ca.key
openssl req -x509 -new -key ca.key -out ca.pem -days 2 -subj /CN=nfsedge-test-ca
key other-ca.key
openssl req -x509 -new -key other-ca.key -out other-ca.pem -days 2 -subj /CN=nfsedge-other-ca
for who in server client; do
  key $who.key
  openssl req -new -key $who.key -out $who.csr -subj /CN=nfsedge-$who
  if [ $who = server ]; then
    printf 'subjectAltName=DNS:nfsedge-upstream,IP:127.0.0.1\n' > $who.ext
  else
    printf 'extendedKeyUsage=clientAuth\n' > $who.ext
  fi
  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $who.pem \
    -days 2 -extfile $who.ext 2>/dev/null
done
