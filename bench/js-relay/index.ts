// The one-hop anchor of target 10: a relay a user would write by hand on
// the same platform, the ingest anchor's front door (bench/js-ingest) and
// the forwarding anchor's consumer (bench/js-forwarder) in one worker. A
// webhook reaches its destination one queue hop after its 202, which is
// the shape hookrelay's first attempt in the `webhooks` consumer has.
//
// Built by bench/run.mjs with esbuild to bench/.build/js-relay.js.

import ingest from "../js-ingest/index";
import forwarder from "../js-forwarder/index";

export default { fetch: ingest.fetch, queue: forwarder.queue };
