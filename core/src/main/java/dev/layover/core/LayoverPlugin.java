package dev.layover.core;

import com.github.kagkarlsson.scheduler.task.Task;
import java.util.List;

/**
 * An optional behaviour that runs beside the engine, as Oban's plugins do: the dead-letter
 * retention, the recovery sweep. A plugin contributes db-scheduler tasks (usually recurring ones,
 * which db-scheduler runs on one worker of the cluster at a time) and is given the running
 * {@link Layover} instance when the workers start.
 *
 * <pre>{@code
 * Layover layover = Layover.builder(dataSource)
 *         .register(translate)
 *         .plugin(DeadLetterRetention.plugin())
 *         .start();
 * }</pre>
 */
@FunctionalInterface
public interface LayoverPlugin {

    /**
     * Called once by {@link Layover#start()}, before the scheduler starts.
     *
     * @param layover the instance being started (built, migrated, with its job types registered)
     * @return the tasks to run in its scheduler; recurring tasks are scheduled on startup
     */
    List<Task<?>> tasks(Layover layover);

    /**
     * Called once by {@link Layover#stop()} after the scheduler has stopped, to release what
     * {@link #tasks(Layover)} set up (listeners, threads). Default: nothing.
     *
     * @param layover the instance being stopped
     */
    default void stop(Layover layover) {}
}
