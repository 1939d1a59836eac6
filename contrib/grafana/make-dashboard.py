#!/usr/bin/env python3
# Writes lode-dashboard.json (Grafana, Prometheus data source): python3 make-dashboard.py lode-dashboard.json
# The panels query the metrics of crates/server/src/metrics; apps/lode/tests/metrics.rs checks every query.
import json, sys
panels=[]
y=0
def row(title):
    global y
    panels.append({"type":"row","title":title,"collapsed":False,"gridPos":{"h":1,"w":24,"x":0,"y":y},"id":len(panels)+1,"panels":[]})
    y+=1
DS={"type":"prometheus","uid":"${datasource}"}
def ts(title, targets, x, w=12, h=8, unit="reqps", desc=""):
    panels.append({"type":"timeseries","title":title,"description":desc,"datasource":DS,
       "gridPos":{"h":h,"w":w,"x":x,"y":y},"id":len(panels)+1,
       "fieldConfig":{"defaults":{"unit":unit},"overrides":[]},
       "options":{"legend":{"displayMode":"table","placement":"right","calcs":["mean","max"]},"tooltip":{"mode":"multi"}},
       "targets":[{"datasource":DS,"expr":e,"legendFormat":l,"refId":chr(65+i)} for i,(e,l) in enumerate(targets)]})
def table(title, targets, x, w=12, h=8):
    panels.append({"type":"table","title":title,"datasource":DS,
       "gridPos":{"h":h,"w":w,"x":x,"y":y},"id":len(panels)+1,
       "targets":[{"datasource":DS,"expr":e,"legendFormat":l,"refId":chr(65+i),"format":"table","instant":True} for i,(e,l) in enumerate(targets)],
       "transformations":[{"id":"merge","options":{}}]})
R='[$__rate_interval]'
I='{instance=~"$instance"}'
NX='{instance=~"$instance",rcode="NXDOMAIN"}'
row("Queries")
ts("Requests per second by transport",[('sum by (transport) (rate(lode_requests_total%s%s))'%(I,R),"{{transport}}")],0)
ts("Responses per second by RCODE",[('sum by (rcode) (rate(lode_responses_total%s%s))'%(I,R),"{{rcode}}")],12)
y+=8
ts("Queries per second by type",[('sum by (qtype) (rate(lode_query_types_total%s%s))'%(I,R),"{{qtype}}")],0)
ts("Responses per second by zone",[('sum by (zone) (rate(lode_zone_responses_total%s%s))'%(I,R),"{{zone}}")],12,
   desc="Per zone, every RCODE class (the first 256 zones answered per thread; the rest in lode_zone_responses_uncounted_total).")
y+=8
ts("NXDOMAIN share by zone",[('sum by (zone) (rate(lode_zone_responses_total%s%s)) / sum by (zone) (rate(lode_zone_responses_total%s%s))'%(NX,R,I,R),"{{zone}}")],0,unit="percentunit")
ts("EDNS, DO, truncated, unanswered",[
    ('sum(rate(lode_requests_edns_total%s%s))'%(I,R),"EDNS"),
    ('sum(rate(lode_requests_dnssec_ok_total%s%s))'%(I,R),"DO"),
    ('sum by (transport) (rate(lode_responses_truncated_total%s%s))'%(I,R),"TC {{transport}}"),
    ('sum by (transport) (rate(lode_requests_unanswered_total%s%s))'%(I,R),"unanswered {{transport}}")],12)
y+=8
row("Transports and protection")
ts("UDP datagrams",[('rate(lode_udp_received_total%s%s)'%(I,R),"received"),('rate(lode_udp_sent_total%s%s)'%(I,R),"sent"),
          ('rate(lode_udp_unanswered_total%s%s)'%(I,R),"unanswered"),('rate(lode_udp_socket_drops_total%s%s)'%(I,R),"kernel drops (socket buffer full)")],0,unit="pps")
ts("TCP connections",[('lode_tcp_connections_open%s'%I,"open"),('rate(lode_tcp_connections_total%s%s)'%(I,R),"accepted/s")],12,unit="short")
y+=8
ts("TCP connections closed by the server",[('sum by (reason) (rate(lode_tcp_connections_closed_total%s%s))'%(I,R),"{{reason}}")],0,unit="short")
ts("Rate limiting and cookies",[('sum by (action) (rate(lode_rrl_responses_total%s%s))'%(I,R),"RRL {{action}}"),
    ('sum by (result) (rate(lode_cookies_total%s%s))'%(I,R),"cookie {{result}}")],12,
   desc="Answers the rate limiter slipped (TC) or dropped (empty when [rrl] is off), and queries with a COOKIE option by outcome (empty when [cookies] is off).")
y+=8
row("Changes")
ts("Updates (RFC 2136)",[('sum by (result) (rate(lode_updates_total%s%s))'%(I,R),"{{result}}"),('rate(lode_journal_commits_total%s%s)'%(I,R),"journal commits (fdatasync)")],0,unit="short")
ts("Transfers and NOTIFY",[('sum by (type) (rate(lode_transfers_out_total%s%s))'%(I,R),"out {{type}}"),
    ('sum by (result) (rate(lode_transfers_in_total%s%s))'%(I,R),"in {{result}}"),
    ('sum by (direction, result) (rate(lode_notify_total%s%s))'%(I,R),"NOTIFY {{direction}} {{result}}")],12,unit="short")
y+=8
row("Zones and process")
table("Zones",[('lode_zone_serial%s'%I,"serial"),('lode_zone_records%s'%I,"records"),('lode_zone_memory_bytes%s'%I,"memory"),('lode_zone_expired%s'%I,"expired"),('lode_zone_load_duration_seconds%s'%I,"last load (s)"),('lode_zone_load_failed%s'%I,"last load failed")],0,w=12,h=9)
ts("CPU",[('rate(process_cpu_seconds_total%s%s)'%(I,R),"CPU (cores)")],12,w=6,h=9,unit="short")
ts("Memory",[('process_resident_memory_bytes%s'%I,"resident"),('sum(lode_zone_memory_bytes%s)'%I,"zones")],18,w=6,h=9,unit="bytes")
dash={
 "__inputs":[{"name":"DS_PROMETHEUS","label":"Prometheus","type":"datasource","pluginId":"prometheus","pluginName":"Prometheus"}],
 "title":"Lode DNS","uid":"lode-dns","description":"Lode authoritative DNS server: requests, answers, zones, updates, transfers (from metrics-listen).",
 "editable":True,"schemaVersion":38,"version":1,"refresh":"10s","time":{"from":"now-1h","to":"now"},
 "tags":["dns","lode"],
 "templating":{"list":[
   {"name":"datasource","type":"datasource","query":"prometheus","label":"Data source","current":{}},
   {"name":"instance","type":"query","label":"Instance","datasource":DS,
    "query":{"query":"label_values(lode_build_info, instance)","refId":"instance"},"definition":"label_values(lode_build_info, instance)",
    "includeAll":True,"multi":True,"allValue":".*","current":{},"refresh":2}]},
 "panels":panels}
json.dump(dash,open(sys.argv[1],"w"),indent=2)
print(len(panels), "panels")
