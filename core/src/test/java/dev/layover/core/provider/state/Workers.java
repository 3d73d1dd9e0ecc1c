package dev.layover.core.provider.state;

import dev.layover.core.Layover;
import java.time.Duration;
import javax.sql.DataSource;

/** Layover instances tuned for the provider state tests: fast polling, short shutdown. */
public final class Workers {

    private Workers() {}

    public static Layover.Builder builder(DataSource ds, String name) {
        return Layover.builder(ds)
                .workerName(name)
                .threads(4)
                .pollInterval(Duration.ofMillis(50))
                .shutdownMaxWait(Duration.ofSeconds(5));
    }
}
