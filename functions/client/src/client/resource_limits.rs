//! Resource limits (docs/resources.md): set, read, list, delete.

use super::request::{enc, Call};
use super::Client;
use crate::error::Error;
use crate::types::{DeletedResource, Page, PoolQueues, ResourceLimit};
use hyper::Method;

impl Client {
    /// `PUT /v1/resources/{resource}`: sets a platform-wide limit (operators only; 403 for
    /// other callers).
    pub async fn put_resource(&self, resource: &str, limit: u32) -> Result<ResourceLimit, Error> {
        self.put_resource_shared(resource, limit, None).await
    }

    /// [`Client::put_resource`] with one tenant's share of the limit, `per_tenant` (1 to
    /// `limit`; `None`: the default, half the limit rounded up).
    pub async fn put_resource_shared(
        &self,
        resource: &str,
        limit: u32,
        per_tenant: Option<u32>,
    ) -> Result<ResourceLimit, Error> {
        let mut body = serde_json::json!({ "limit": limit });
        if let Some(p) = per_tenant {
            body["perTenant"] = p.into();
        }
        self.execute(Call::new(Method::PUT, format!("/v1/resources/{}", enc(resource))).json(&body)?).await
    }

    /// `GET /v1/resources/{resource}`: the limit, one tenant's share, and (operators only) how
    /// many executions hold it now.
    pub async fn get_resource(&self, resource: &str) -> Result<ResourceLimit, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/resources/{}", enc(resource)))).await
    }

    /// `GET /v1/resources`: every limit (one page).
    pub async fn list_resources(&self) -> Result<Page<ResourceLimit>, Error> {
        self.execute(Call::new(Method::GET, "/v1/resources".to_string())).await
    }

    /// `DELETE /v1/resources/{resource}` (operators only).
    pub async fn delete_resource(&self, resource: &str) -> Result<DeletedResource, Error> {
        self.execute(Call::new(Method::DELETE, format!("/v1/resources/{}", enc(resource)))).await
    }

    /// `GET /v1/pools`: every worker pool's queues as SQS counts them now, and saturation
    /// against the pool's capacity (operators only; 403 for other callers).
    pub async fn list_pools(&self) -> Result<PoolQueues, Error> {
        self.execute(Call::new(Method::GET, "/v1/pools".to_string())).await
    }
}
