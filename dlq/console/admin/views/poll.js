// One poll loop per view: `start()` runs a read now and again `everyMs`
// after each answer, replacing any loop (and dropping any read) already
// under way, so a button that restarts it never leaves two loops; `stop()`
// ends it for good (the router calls it when the view is left).

/**
 * A poll loop over `tick`, an async function given `current()` (whether
 * its loop is still the live one: check it after each await) and
 * answering whether to poll again.
 */
export function poller(tick, everyMs) {
  let loop = 0;
  let timer = null;
  let stopped = false;
  const start = async () => {
    if (stopped) return;
    const mine = ++loop;
    clearTimeout(timer);
    const current = () => !stopped && mine === loop;
    const again = await tick(current);
    if (again && current()) timer = setTimeout(start, everyMs);
  };
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
  };
  return { start, stop };
}
