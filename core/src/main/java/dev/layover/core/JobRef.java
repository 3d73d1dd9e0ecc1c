package dev.layover.core;

import java.util.Objects;

/**
 * A job named by its type and id, as a dependency ({@link EnqueueOptions#withAfter}).
 *
 * @param jobType the job type's name
 * @param id the job's id
 */
public record JobRef(String jobType, String id) {

    /**
     * @param jobType the job type's name
     * @param id the job's id
     */
    public JobRef {
        Objects.requireNonNull(jobType, "jobType");
        Objects.requireNonNull(id, "id");
    }

    /**
     * @param e an enqueued job
     * @return its reference
     */
    public static JobRef of(Enqueued e) {
        return new JobRef(e.jobType(), e.id());
    }
}
