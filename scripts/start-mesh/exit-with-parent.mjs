// Preloaded (`node --import`) into every Node.js process npm start runs, which it starts with an IPC
// channel: when the start script dies, even by SIGKILL, the channel closes and this process stops as if
// told to (SIGTERM, so a service still drains its NATS connection). Nothing outlives the start script.
if (process.channel) {
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  // The channel only watches the parent: it must not keep a one-shot command (the provisioner) running.
  process.channel.unref();
}
