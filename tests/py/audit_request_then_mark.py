
# A GET of pwned.example:80, then writes `ran` to the file argv[1].
import sys

get('pwned.example', 80)
open(sys.argv[1], 'w').write('ran')
