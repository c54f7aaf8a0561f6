// dynalite throws from a request's 'error' handler when a client closes the connection while
// sending the body, which ends the whole server (and every other test's table). Clients abort
// requests whenever their deadline passes, as the store's tests make them do on purpose, so an
// aborted request is ignored here; any other uncaught error still ends the server.
'use strict'
process.on('uncaughtException', (err) => {
  if (err && err.code === 'ECONNRESET') return
  console.error(err)
  process.exit(1)
})
