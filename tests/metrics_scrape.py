#!/usr/bin/env python3
"""Scrapes a Stria daemon's /metrics and parses it with prometheus_client's text parser
(python3-prometheus-client): prints one `NAME{k="v",...} VALUE` line per sample, labels
sorted, so a test can check values exactly. Exit 1 when the page does not parse."""
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
for family in text_string_to_metric_families(text):
    for s in family.samples:
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
        print(f"{s.name}{{{labels}}} {s.value:.0f}")
