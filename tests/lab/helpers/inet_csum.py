# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The Internet checksum (RFC 1071), the one copy the lab helpers share.

    fold(data)          one's complement sum of data's 16-bit words (an odd
                        length is padded with a zero byte), carries folded
                        back in; a header whose checksum is right folds to
                        0xffff over the pseudo-header and the header itself
    checksum(data)      what goes into a checksum field: ~fold(data)
    udp_checksum(data)  checksum() for UDP: 0 goes out as 0xffff, because
                        0 means "no checksum" (RFC 768)
    pseudo_header4(src, dst, proto, length)    the IPv4 pseudo-header
    pseudo_header6(src, dst, next_header, length)    the IPv6 one (RFC 8200)

Addresses are packed bytes (socket.inet_pton).
"""

import struct


def fold(data):
    data = bytes(data)
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def checksum(data):
    return ~fold(data) & 0xffff


def udp_checksum(data):
    return checksum(data) or 0xffff


def pseudo_header4(src, dst, proto, length):
    return src + dst + struct.pack("!BBH", 0, proto, length)


def pseudo_header6(src, dst, next_header, length):
    return src + dst + struct.pack("!I", length) + b"\0\0\0" + bytes([next_header])
