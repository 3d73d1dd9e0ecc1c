package dev.layover.console;

import com.fasterxml.jackson.databind.JsonNode;
import dev.layover.core.ConfigurationException;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.control.JobControl;
import dev.layover.core.provider.state.ProviderStates;
import dev.layover.dlq.AuditLog;
import dev.layover.dlq.DeadLetters;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The dead-letter store and provider state the console works on.
 *
 * <p>With the application's {@link Layover} (one with registered job types), its registry decides:
 * edited args are validated against the job type, and dead letters of types it does not register
 * cannot be replayed (the dlq's rule).
 *
 * <p>Without one, the console cannot know the args types. It registers a pass-through job type
 * ({@link JsonNode} args, a handler that never runs: this instance is never started) for every job
 * type found among the dead letters, so that a replay as stored inserts the job for the
 * application's workers to run, and refuses edited args (they cannot be validated). When a dead
 * letter of a type not seen yet is replayed, the pass-through instance is rebuilt with it.
 */
final class ConsoleStore {

    private static final Logger LOG = LoggerFactory.getLogger(ConsoleStore.class);

    private final DataSource dataSource;
    private final Layover appLayover;
    private final ConsoleSql sql;
    private final ProviderStates providerStates;
    private final AuditLog auditLog;
    private final JobControl control;
    private volatile Holder holder;

    /** The pass-through instance and its store, or the application's. */
    private record Holder(Layover layover, DeadLetters deadLetters, Set<String> types) {}

    ConsoleStore(DataSource dataSource, Layover appLayover, ConsoleSql sql) {
        this.dataSource = dataSource;
        this.sql = sql;
        boolean validating = appLayover != null && !appLayover.jobTypes().isEmpty();
        this.appLayover = validating ? appLayover : null;
        this.providerStates = appLayover != null ? appLayover.providerStates() : ProviderStates.create(dataSource);
        this.auditLog = AuditLog.create(dataSource);
        this.control = appLayover != null ? appLayover.control() : JobControl.create(dataSource);
        if (validating) {
            this.holder = new Holder(appLayover, DeadLetters.create(appLayover), Set.of());
        } else {
            this.holder = passThrough(new LinkedHashSet<>(sql.deadLetterJobTypes()));
        }
    }

    /** @return whether edited args are validated (the application's job types are known) */
    boolean validatesArgs() {
        return appLayover != null;
    }

    /**
     * @param jobType a job type
     * @return whether edited args of this type can be validated here
     */
    boolean canValidate(String jobType) {
        return appLayover != null && appLayover.jobType(jobType).isPresent();
    }

    /** @return the registered job type names (empty without the application's Layover) */
    List<String> registeredTypes() {
        List<String> out = new ArrayList<>();
        if (appLayover != null) {
            appLayover.jobTypes().forEach(t -> out.add(t.name()));
        }
        return out;
    }

    ProviderStates providerStates() {
        return providerStates;
    }

    AuditLog auditLog() {
        return auditLog;
    }

    /** @return cancel, pause and resume (the application's, or one on the data source) */
    JobControl control() {
        return control;
    }

    /** @return run-time schedules (the application's instance, or the pass-through one): list, pause, resume */
    dev.layover.core.schedule.Schedules schedules() {
        return (appLayover != null ? appLayover : holder.layover()).schedules();
    }

    /**
     * @param jobType a schedule's job type, about to be triggered
     * @return schedules whose instance can write a job of that type (pass-through mode: rebuilt with it)
     */
    dev.layover.core.schedule.Schedules schedulesFor(String jobType) {
        if (appLayover != null) {
            return appLayover.schedules();
        }
        if (!holder.types().contains(jobType)) {
            refresh(Set.of(jobType));
        }
        return holder.layover().schedules();
    }

    /** @return the store for reads and actions that need no particular job type */
    DeadLetters deadLetters() {
        return holder.deadLetters();
    }

    /**
     * @param jobType the job type about to be replayed
     * @return a store that can replay it (pass-through mode: rebuilt when the type is new)
     */
    DeadLetters forReplayOf(String jobType) {
        Holder h = holder;
        if (appLayover != null || h.types().contains(jobType)) {
            return h.deadLetters();
        }
        return refresh(Set.of(jobType));
    }

    /** @return a store that can replay every job type among the dead letters now (bulk replays) */
    DeadLetters forBulkReplay() {
        if (appLayover != null) {
            return holder.deadLetters();
        }
        return refresh(new LinkedHashSet<>(sql.deadLetterJobTypes()));
    }

    private synchronized DeadLetters refresh(Set<String> wanted) {
        Holder h = holder;
        if (h.types().containsAll(wanted)) {
            return h.deadLetters();
        }
        Set<String> all = new LinkedHashSet<>(h.types());
        all.addAll(wanted);
        Holder next = passThrough(all);
        holder = next;
        h.layover().stop();
        return next.deadLetters();
    }

    private Holder passThrough(Set<String> names) {
        List<JobType<?>> types = new ArrayList<>();
        Set<String> accepted = new LinkedHashSet<>();
        for (String name : names) {
            try {
                types.add(JobType.builder(name, JsonNode.class)
                        .handler((args, ctx) -> {
                            throw new IllegalStateException("the replay console's pass-through job type '" + name
                                    + "' never runs jobs");
                        })
                        .build());
                accepted.add(name);
            } catch (ConfigurationException e) {
                LOG.warn("Layover console: dead letters of job type '{}' cannot be replayed from here: {}", name,
                        e.getMessage());
            }
        }
        Layover layover = Layover.builder(dataSource).migrate(false).register(types).build();
        return new Holder(layover, DeadLetters.create(layover), Set.copyOf(accepted));
    }

    /** Stops the pass-through instance (never the application's). */
    void close() {
        Holder h = holder;
        if (appLayover == null && h != null) {
            h.layover().stop();
        }
    }
}
