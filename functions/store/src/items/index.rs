//! Index names, from `resources.json` through [`sundial_model::resources`]. Each is found by its
//! partition key attribute, which the codec names anyway, so no index name is a literal here.

use super::attr;
use crate::StoreError;
use sundial_model::resources::Resources;

fn keyed_by(pk_attr: &str) -> Result<&'static str, StoreError> {
    Resources::get()
        .tables
        .values()
        .flat_map(|t| &t.indexes)
        .find(|ix| ix.partition_key.name == pk_attr)
        .map(|ix| ix.name.as_str())
        .ok_or_else(|| StoreError::Permanent {
            op: "Query",
            message: format!("resources.json defines no index keyed by {pk_attr}"),
        })
}

/// The jobs table's sparse index of enabled jobs by time bucket (`due_pk`, `due_sk`).
pub fn due() -> Result<&'static str, StoreError> {
    keyed_by(attr::DUE_PK)
}

/// The jobs table's keys-only index of a tenant's jobs (`tenant_pk`, `tenant_sk`).
pub fn by_tenant() -> Result<&'static str, StoreError> {
    keyed_by(attr::TENANT_PK)
}

/// The executions table's sparse index of off-happy-path executions (`att_pk`, `att_sk`).
pub fn attention() -> Result<&'static str, StoreError> {
    keyed_by(attr::ATT_PK)
}

/// Open executions by the instant the reconciler should look at them.
pub fn open() -> Result<&'static str, StoreError> {
    keyed_by(attr::OPEN_PK)
}

#[cfg(test)]
mod tests {
    use crate::items::{attr, index};

    #[test]
    fn index_names_come_from_resources_json_by_their_key_attributes() {
        use sundial_model::resources::Resources;
        let indexes: Vec<_> = Resources::get().tables.values().flat_map(|t| &t.indexes).collect();
        for (name, pk, sk) in [
            (index::due(), attr::DUE_PK, attr::DUE_SK),
            (index::by_tenant(), attr::TENANT_PK, attr::TENANT_SK),
            (index::attention(), attr::ATT_PK, attr::ATT_SK),
            (index::open(), attr::OPEN_PK, attr::OPEN_DUE),
        ] {
            let name = name.unwrap_or_else(|e| panic!("{e}"));
            let ix = indexes.iter().find(|i| i.name == name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!((ix.partition_key.name.as_str(), ix.sort_key.name.as_str()), (pk, sk));
        }
        assert_eq!(indexes.len(), 4, "an index without an accessor in store::items::index");
    }

    #[test]
    fn key_and_ttl_attributes_match_resources_json() {
        use sundial_model::resources::Resources;
        for t in Resources::get().tables.values() {
            assert_eq!((t.partition_key.name.as_str(), t.sort_key.name.as_str()), (attr::PK, attr::SK));
            assert_eq!(t.ttl_attribute, attr::EXPIRES);
        }
    }
}
