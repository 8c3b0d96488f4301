// Loaded by a test with `node --import` right after src/early-signals.mjs and before tsx: tells the test that the
// process is past Node's own boot and the early signal catcher is in place (the start-up signal test waits for it).
process.stderr.write('preload: early signal catcher in place\n');
