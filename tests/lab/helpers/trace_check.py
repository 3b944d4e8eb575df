#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Check what `xdp-vi trace` wrote for N messages that all met the same
fate: its live lines, the pcap (as `tcpdump -r FILE -nn` printed it), the
pcap's side file FILE.events, and the SVG timeline.

usage: trace_check.py files OUT PCAP_TEXT EVENTS SVG --count N --endpoint TAG
                      --handler H --action ACTION --len LEN --reply-from ADDR.PORT
       trace_check.py handler STATUS_JSON PORT H NAME...

  files    exit 0 if every file holds exactly N events of endpoint TAG,
           handler H, ACTION and frame length LEN (pcap records: from
           ADDR.PORT, the handler's reply); else print what differs, exit 1
  handler  the counters NAME... of handler H of the endpoint on PORT in a
           file of `xdp-vi status --json`, one line, space-separated
"""

import json
import re
import sys
import xml.etree.ElementTree as ET
import argparse

SVG = "{http://www.w3.org/2000/svg}"


def check_files(a):
    errs = []
    line_re = re.compile(r"^\d\d:\d\d:\d\d\.\d{9}\s+%s\s+handler %d\s+%s\s+len %d\s+\d+ ns\s+cpu \d+$"
                         % (re.escape(a.endpoint), a.handler, re.escape(a.action), a.len))
    lines = [l.rstrip("\n") for l in open(a.out) if l.strip()]
    bad = [l for l in lines if not line_re.match(l)]
    if len(lines) != a.count or bad:
        errs.append("live output: %d lines, expected %d; unexpected: %r"
                    % (len(lines), a.count, bad[:2]))
    recs = [l for l in open(a.pcap_text) if l.strip()]
    bad = [l for l in recs if (a.reply_from + " > ") not in l or "UDP" not in l]
    if len(recs) != a.count or bad:
        errs.append("pcap: %d records, expected %d; unexpected: %r" % (len(recs), a.count, bad[:2]))
    ev = [l.rstrip("\n").split("\t") for l in open(a.events) if not l.startswith("#")]
    bad = [e for e in ev if len(e) != 9 or e[3] != a.endpoint or e[4] != str(a.handler)
           or e[5] != a.action or e[6] != str(a.len)]
    if len(ev) != a.count or bad or [e[0] for e in ev] != [str(i + 1) for i in range(len(ev))]:
        errs.append("events file: %d lines, expected %d numbered 1..N; unexpected: %r"
                    % (len(ev), a.count, bad[:2]))
    try:
        root = ET.parse(a.svg).getroot()
    except ET.ParseError as e:
        errs.append("SVG is not well-formed XML: %s" % e)
    else:
        lanes = [g for g in root.iter(SVG + "g") if g.get("class") == "lane"]
        if [g.get("data-handler") for g in lanes] != [str(a.handler)]:
            errs.append("SVG lanes %r, expected one for handler %d"
                        % ([g.get("data-handler") for g in lanes], a.handler))
        else:
            boxes = [r for r in lanes[0].iter(SVG + "rect") if r.get("class") == a.action]
            if len(boxes) != a.count:
                errs.append("SVG: %d %s boxes in the lane, expected %d"
                            % (len(boxes), a.action, a.count))
    for e in errs:
        print(e)
    return 1 if errs else 0


def handler_counts(path, port, h, names):
    st = json.load(open(path))
    for i in st["interfaces"]:
        for e in i.get("endpoints") or []:
            if e["tag"].endswith(":" + port):
                for x in e.get("handlers") or []:
                    if x["handler"] == h:
                        print(" ".join(str(x[n]) for n in names))
                        return 0
    print(" ".join("0" for _ in names))
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "handler":
        return handler_counts(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:])
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["files"])
    for f in ("out", "pcap_text", "events", "svg"):
        ap.add_argument(f)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--handler", type=int, required=True)
    ap.add_argument("--action", required=True)
    ap.add_argument("--len", type=int, required=True)
    ap.add_argument("--reply-from", required=True)
    return check_files(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
