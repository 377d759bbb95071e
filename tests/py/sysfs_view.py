# Prints the interfaces, every `address` of a network device found under
# /sys, and whether firmware tables, DMI ids and /proc's page maps read.
import os, errno
print('net:', ' '.join(sorted(os.listdir('/sys/class/net'))))
macs = []
for top in ('/sys/class/net', '/sys/devices'):
    for root, dirs, files in os.walk(top):
        if '/net/' in root + '/' and 'address' in files:
            try:
                macs.append(open(os.path.join(root, 'address')).read().strip())
            except OSError:
                pass
print('macs:', ' '.join(sorted(set(macs))) or 'none')
def attempt(label, f):
    try:
        f()
        print(label + ': OK')
    except OSError as e:
        print(label + ': ERR', errno.errorcode.get(e.errno, e.errno))
def read(path, n=64):
    with open(path, 'rb') as f:
        if not f.read(n):
            raise OSError(errno.ENODATA, 'empty')
def listing(path):
    if not os.listdir(path):
        raise OSError(errno.ENOENT, 'empty')
attempt('firmware-list', lambda: listing('/sys/firmware'))
attempt('acpi-list', lambda: listing('/sys/firmware/acpi/tables'))
attempt('acpi-dsdt', lambda: read('/sys/firmware/acpi/tables/DSDT'))
attempt('dmi-uuid', lambda: read('/sys/class/dmi/id/product_uuid'))
attempt('dmi-vendor', lambda: read('/sys/class/dmi/id/sys_vendor'))
attempt('kpageflags', lambda: read('/proc/kpageflags', 8))
attempt('kpagecount', lambda: read('/proc/kpagecount', 8))
attempt('kpagecgroup', lambda: read('/proc/kpagecgroup', 8))
attempt('cpu-online', lambda: read('/sys/devices/system/cpu/online'))
attempt('cgroup-list', lambda: listing('/sys/fs/cgroup'))
