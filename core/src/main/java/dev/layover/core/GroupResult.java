package dev.layover.core;

import java.util.List;

/**
 * What a group's callback reads of its group ({@link JobContext#group()}): its members, each with its
 * end and its handler's result ({@code Outcome.done(result)}, kept as JSON), and the counts by end.
 * Read from {@code layover.groups} and {@code layover.group_members} when asked (one query each).
 *
 * @param groupId the group's id (the callback job's id)
 * @param policy the group's policy
 * @param members every member, in the order they were added
 */
public record GroupResult(String groupId, GroupOptions.Policy policy, List<Member> members) {

    /**
     * @param groupId the group's id
     * @param policy its policy
     * @param members its members
     */
    public GroupResult {
        members = List.copyOf(members);
    }

    /** @return how many members the group has */
    public int size() {
        return members.size();
    }

    /** @return members whose handler returned done */
    public long done() {
        return members.stream().filter(m -> m.state().equals("done")).count();
    }

    /** @return members whose dead letter was discarded */
    public long discarded() {
        return members.stream().filter(m -> m.state().equals("discarded")).count();
    }

    /**
     * One member.
     *
     * @param jobType its job type
     * @param jobId its id
     * @param state {@code done} or {@code discarded} (a callback runs once none is {@code pending} or
     *     {@code parked})
     * @param resultJson its handler's result as JSON, or null (none, a discard, or over 64 KiB)
     */
    public record Member(String jobType, String jobId, String state, String resultJson) {

        /**
         * @param type the class to read the result as (with Layover's default Jackson mapper)
         * @param <T> the result type
         * @return the result, or null when none was kept
         * @throws InvalidArgsException when the stored JSON does not read as {@code type}
         */
        public <T> T result(Class<T> type) {
            return StoredJson.read(resultJson, type, "the result of " + jobType + " job " + jobId);
        }
    }
}
