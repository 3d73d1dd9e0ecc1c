package dev.layover.core;

import java.util.List;

/**
 * The group an enqueue made ({@link Layover#enqueueGroup}).
 *
 * @param groupId the group's id ({@code group_id} in {@code layover.job_groups}; the callback job's id)
 * @param created false when a group of that id existed: nothing was written, {@code members} is empty
 * @param callback the callback job
 * @param members one per member argument, in order; {@code created = false} where an idempotency key
 *     named an existing job, which is then not a member
 */
public record EnqueuedGroup(String groupId, boolean created, Enqueued callback, List<Enqueued> members) {

    /**
     * @param groupId the group's id
     * @param created whether this call made it
     * @param callback the callback job
     * @param members the members
     */
    public EnqueuedGroup {
        members = List.copyOf(members);
    }
}
