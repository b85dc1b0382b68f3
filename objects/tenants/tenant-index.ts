/**
 * The TenantDirectory's index role (`tenants-index/all`, tenantIndexStub):
 * the list of directory tenants, for `GET /admin/tenants` — a Worker cannot
 * enumerate objects. The admin routes write a row when a tenant is created
 * or deleted, and repair it from the tenant's own `directoryRow`.
 */
import type { DirectoryRow } from "./rpc";
import type { TenantStore } from "./store";

/** The rows of every directory tenant (deleted ones included). */
export class TenantIndex {
  constructor(private readonly store: TenantStore) {}

  /** Records or updates a directory tenant. */
  upsert(row: DirectoryRow): void {
    this.store.upsertDirectory(row);
  }

  /** Every directory tenant, by id. */
  list(): DirectoryRow[] {
    return this.store.directory();
  }
}
