import { describe, expect, it } from 'vitest';
import { chooseCgroups, locateCgroups } from './cgroups.js';

// /proc/self/cgroup and /proc/self/mountinfo as three kinds of host write them.
const HYBRID = {
  cgroup: ['9:name=systemd:/', '8:pids:/', '4:memory:/process_api/07d1', '1:cpu:/', '0::/'].join('\n'),
  mountinfo: [
    '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
    '32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
    '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
    '39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
    '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
  ].join('\n'),
};
const SYSTEMD_V2 = {
  cgroup: '0::/system.slice/agentmesh-executor.service',
  mountinfo:
    '35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot',
};
// A container with its own cgroup namespace: the mount's root is the container's cgroup.
const CONTAINER_V1 = {
  cgroup: ['5:memory:/docker/abc', '3:pids:/docker/abc', '0::/'].join('\n'),
  mountinfo: [
    '40 30 0:41 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory',
    '41 30 0:42 /docker/abc /sys/fs/cgroup/pids ro,nosuid - cgroup cgroup rw,pids',
  ].join('\n'),
};

describe('finding where runs’ cgroups go', () => {
  it('when v1 holds memory and pids and the v2 mount has no controllers (a hybrid host), v1 is chosen below the process’s own cgroups', () => {
    const candidates = locateCgroups(HYBRID.cgroup, HYBRID.mountinfo);

    expect(candidates).toEqual({
      v2: '/sys/fs/cgroup/unified',
      v1: {
        version: 1,
        memory: '/sys/fs/cgroup/memory/process_api/07d1',
        pids: '/sys/fs/cgroup/pids',
        cpu: '/sys/fs/cgroup/cpu',
      },
    });
    expect(chooseCgroups(candidates, ['hugetlb'])).toEqual({ location: candidates.v1 });
  });

  it('when a v2 service cgroup has memory and pids delegated, v2 is chosen at the service’s own cgroup', () => {
    const candidates = locateCgroups(SYSTEMD_V2.cgroup, SYSTEMD_V2.mountinfo);

    expect(candidates).toEqual({ v2: '/sys/fs/cgroup/system.slice/agentmesh-executor.service' });
    expect(chooseCgroups(candidates, ['cpu', 'memory', 'pids'])).toEqual({
      location: { version: 2, own: '/sys/fs/cgroup/system.slice/agentmesh-executor.service' },
    });
  });

  it('when v2 offers no memory controller and no v1 hierarchy exists, the reason names both', () => {
    const chosen = chooseCgroups(locateCgroups(SYSTEMD_V2.cgroup, SYSTEMD_V2.mountinfo), ['pids']);

    expect(chosen).toEqual({
      unavailable:
        'cgroup v2: /sys/fs/cgroup/system.slice/agentmesh-executor.service has no memory and pids controllers (it has: pids); no cgroup v1 memory and pids hierarchies are mounted',
    });
  });

  it('when a cgroup namespace mounts the process’s own cgroup as the root, its directory is the mount point', () => {
    expect(locateCgroups(CONTAINER_V1.cgroup, CONTAINER_V1.mountinfo).v1).toEqual({
      version: 1,
      memory: '/sys/fs/cgroup/memory',
      pids: '/sys/fs/cgroup/pids',
    });
  });
});
