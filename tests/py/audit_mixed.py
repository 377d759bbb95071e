
# An allowed GET (with a secret in its path and query), a denied one, an
# unlisted one twice, and SOCKS5 to the allowed and a denied host.
# argv: the allowed upstream's port, the secret, the upstream's body.
import sys

port, secret, body = int(sys.argv[1]), sys.argv[2], sys.argv[3]
r = get('127.0.0.1', port, '/private/%s?key=%s' % (secret, secret))
print('allowed:', status(r), r.endswith(body))
print('denied:', status(get('denied.example', 80)))
print('unlisted:', status(get('unlisted.example', 80)))
print('unlisted-again:', status(get('unlisted.example', 80)))
print('socks:', socks_get('127.0.0.1', port).endswith(body))
print('socks-denied:', socks_get('denied.example', 443))
