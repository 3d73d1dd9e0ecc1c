/**
 * The Layover replay console: a web console and JSON API over jobs, dead letters, provider state
 * and the audit log. Start it embedded with {@link dev.layover.console.ReplayConsole#start} or
 * standalone with {@link dev.layover.console.ConsoleMain}; configure it with
 * {@link dev.layover.console.ConsoleOptions}. The API is documented in {@code docs/console-api.md}.
 */
package dev.layover.console;
