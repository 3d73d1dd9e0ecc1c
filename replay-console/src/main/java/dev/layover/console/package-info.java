/**
 * The Layover replay console: a web console and JSON API over jobs, finished jobs, dead letters,
 * provider state and the audit log. It is a Jakarta Servlet ({@link dev.layover.console.ConsoleServlet})
 * to mount in an application, or runs in its own embedded Jetty
 * ({@link dev.layover.console.ReplayConsole#start}), or standalone
 * ({@link dev.layover.console.ConsoleMain}); configure it with
 * {@link dev.layover.console.ConsoleOptions}. The API is documented in {@code docs/console-api.md}.
 */
package dev.layover.console;
