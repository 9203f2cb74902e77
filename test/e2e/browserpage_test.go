package e2e

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// callPage is the page the browser tests drive: a call between two
// RTCPeerConnections of the same page, relay only, with an unreliable data
// channel (no retransmission, so a message the relay loses stays lost) that
// the second peer echoes. Each function returns a promise the test awaits.
const callPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>turnd call</title></head><body><script>
"use strict";
let pc1, pc2, dc;
const echoed = new Set();
const errors = [];
let next = 0;

function watch(pc) {
  pc.onicecandidateerror = e => errors.push({code: e.errorCode, text: e.errorText, url: e.url});
}

// startCall connects the two peers through servers and resolves with the
// selected candidate pair once the channel is open.
window.startCall = async (servers) => {
  const cfg = {iceServers: servers, iceTransportPolicy: "relay"};
  pc1 = new RTCPeerConnection(cfg);
  pc2 = new RTCPeerConnection(cfg);
  for (const [a, b] of [[pc1, pc2], [pc2, pc1]]) {
    watch(a);
    a.onicecandidate = e => { if (e.candidate) b.addIceCandidate(e.candidate).catch(() => {}); };
  }
  pc2.ondatachannel = e => { const ch = e.channel; ch.onmessage = m => ch.send(m.data); };
  dc = pc1.createDataChannel("echo", {ordered: false, maxRetransmits: 0});
  dc.onmessage = m => echoed.add(Number(m.data));
  const open = new Promise((resolve, reject) => {
    dc.onopen = resolve;
    setTimeout(() => reject(new Error("channel not open after 10 s; errors " + JSON.stringify(errors))), 10000);
  });
  await pc1.setLocalDescription(await pc1.createOffer());
  await pc2.setRemoteDescription(pc1.localDescription);
  await pc2.setLocalDescription(await pc2.createAnswer());
  await pc1.setRemoteDescription(pc2.localDescription);
  await open;
  return pair();
};

// pair describes pc1's selected candidate pair.
window.pair = async () => {
  const stats = await pc1.getStats();
  let id = "";
  stats.forEach(r => { if (r.type === "transport" && r.selectedCandidatePairId) id = r.selectedCandidatePairId; });
  const p = stats.get(id);
  if (!p) return {id: ""};
  const c = r => ({type: r.candidateType, address: r.address, port: r.port, relayProtocol: r.relayProtocol || "", url: r.url || ""});
  return {id, local: c(stats.get(p.localCandidateId)), remote: c(stats.get(p.remoteCandidateId))};
};

// burst sends n numbered messages gapMs apart and resolves with how many
// came back, waiting at most a second after the last one.
window.burst = async (n, gapMs) => {
  const first = next;
  for (let i = 0; i < n; i++) {
    dc.send(String(next++));
    await new Promise(r => setTimeout(r, gapMs));
  }
  const count = () => { let k = 0; for (let i = first; i < next; i++) if (echoed.has(i)) k++; return k; };
  for (let waited = 0; count() < n && waited < 1000; waited += 20) await new Promise(r => setTimeout(r, 20));
  return {sent: n, echoed: count()};
};

// sentReaches resolves once n messages have been sent since the page loaded.
window.sentReaches = async (n) => {
  while (next < n) await new Promise(r => setTimeout(r, 5));
  return next;
};

// hangUp ends the call; Chromium releases its allocations (Refresh, lifetime 0).
window.hangUp = () => { pc1.close(); pc2.close(); return true; };

// gather collects one peer's relay candidates and ICE errors, until
// gathering completes or 10 s pass.
window.gather = async (servers) => {
  const pc = new RTCPeerConnection({iceServers: servers, iceTransportPolicy: "relay"});
  watch(pc);
  const candidates = [];
  const done = new Promise(resolve => {
    pc.onicecandidate = e => { if (e.candidate) candidates.push(e.candidate.address); else resolve(); };
    setTimeout(resolve, 10000);
  });
  pc.createDataChannel("probe");
  await pc.setLocalDescription(await pc.createOffer());
  await done;
  pc.close();
  return {candidates, errors};
};
</script></body></html>`

// servePage serves callPage on loopback for the length of the test.
func servePage(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(callPage))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
