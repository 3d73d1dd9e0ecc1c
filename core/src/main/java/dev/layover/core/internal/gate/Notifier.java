package dev.layover.core.internal.gate;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds one pooled connection in {@code LISTEN layover_provider_state} and hands each
 * notification to the gate. Reconnects after an error (logged once per outage); the gate's
 * one-second refresh covers the gap. Without a Postgres driver behind the pool it does nothing.
 */
final class Notifier {

    private static final Logger LOG = LoggerFactory.getLogger(Notifier.class);
    private static final int POLL_MS = 250;

    private final DataSource dataSource;
    private final StateCache gate;
    private final Thread thread;
    private volatile boolean running = true;

    Notifier(DataSource dataSource, StateCache gate, String name) {
        this.dataSource = dataSource;
        this.gate = gate;
        this.thread = new Thread(this::loop, name);
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    void stop() {
        running = false;
        try {
            thread.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void loop() {
        long backoffMs = 250;
        boolean failing = false;
        while (running) {
            try (Connection c = dataSource.getConnection()) {
                PGConnection pg;
                try {
                    pg = c.unwrap(PGConnection.class);
                } catch (SQLException notPostgres) {
                    LOG.info("Layover: the data source gives no Postgres connection to LISTEN on; provider state "
                            + "changes of other JVMs are seen by the one-second refresh only");
                    return;
                }
                if (!c.getAutoCommit()) {
                    c.setAutoCommit(true);
                }
                try (Statement st = c.createStatement()) {
                    st.execute("LISTEN " + StateSql.NOTIFY_CHANNEL);
                }
                if (failing) {
                    LOG.info("Layover: listening for provider state changes again");
                    failing = false;
                }
                backoffMs = 250;
                gate.wakeUp(); // changes made while we were not listening
                while (running) {
                    PGNotification[] ns = pg.getNotifications(POLL_MS);
                    if (ns != null) {
                        for (PGNotification n : ns) {
                            gate.onNotification(n.getParameter());
                        }
                    }
                }
                try (Statement st = c.createStatement()) {
                    st.execute("UNLISTEN " + StateSql.NOTIFY_CHANNEL);
                }
            } catch (SQLException | RuntimeException e) {
                if (!running) {
                    return;
                }
                if (!failing) {
                    LOG.warn("Layover: lost the provider state NOTIFY connection, reconnecting (the one-second "
                            + "refresh goes on meanwhile): {}", e.getMessage());
                    failing = true;
                }
                try {
                    Thread.sleep(backoffMs);
                } catch (InterruptedException ie) {
                    return;
                }
                backoffMs = Math.min(5000, backoffMs * 2);
            }
        }
    }
}
