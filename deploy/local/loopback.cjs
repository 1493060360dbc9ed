// Preloaded into the Node emulators (node --require, internal/localstack):
// every server they start listens on 127.0.0.1, whatever host they ask
// for. fauxqs and kinesis-local both hard-code 0.0.0.0 and have no
// setting for it; a local stack must not be reachable from the network.
'use strict';
const net = require('net');

const LOOPBACK = '127.0.0.1';
const wildcard = (h) => h === undefined || h === null || h === '' || h === '0.0.0.0' || h === '::' || h === '::0';
const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function (...args) {
  const [first, second] = args;
  if (first !== null && typeof first === 'object' && !Array.isArray(first) && first.path === undefined && first.fd === undefined && first._handle === undefined) {
    // listen({ port, host, ... }, cb)
    if (wildcard(first.host)) args[0] = { ...first, host: LOOPBACK };
  } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    // listen(port[, host][, backlog][, cb])
    if (typeof second === 'string') {
      if (wildcard(second)) args[1] = LOOPBACK;
    } else {
      args.splice(1, 0, LOOPBACK);
    }
  }
  return listen.apply(this, args);
};
