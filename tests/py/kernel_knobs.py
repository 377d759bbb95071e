# Opens /proc and /sys knobs and reads /proc/kcore and /proc/kallsyms,
# printing `label: OK`, `label: READ <bytes>` or `label: ERR <errno>`.
# argv[1]: a /sys file the host's root could open for writing.
import errno
import os
import sys

sys_file = sys.argv[1]


def t(label, path, flags):
    try:
        os.close(os.open(path, flags))
        print(label + ': OK')
    except OSError as e:
        print(label + ': ERR ' + errno.errorcode.get(e.errno, str(e.errno)))


def read(label, path):
    try:
        d = open(path, 'rb').read(4096)
        print(label + ': READ %d' % len(d))
    except OSError as e:
        print(label + ': ERR ' + errno.errorcode.get(e.errno, str(e.errno)))


t('core_pattern', '/proc/sys/kernel/core_pattern', os.O_WRONLY)
t('core_pattern_read', '/proc/sys/kernel/core_pattern', os.O_RDONLY)
t('sysrq', '/proc/sysrq-trigger', os.O_WRONLY)
t('sys', sys_file, os.O_WRONLY)
t('sys_read', sys_file, os.O_RDONLY)
t('proc_self_attr', '/dev/null', os.O_WRONLY)
read('kcore', '/proc/kcore')
read('kallsyms', '/proc/kallsyms')
