//! The one way the instrumentation attaches an SDK interceptor: every client of a
//! [`Clients`] rebuilt with the interceptor made for its service (the access recorder and the
//! meter both do this, for the five services Sundial calls).

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextRef, FinalizerInterceptorContextRef, Input,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};
use sundial_core::aws::Clients;

/// What an instrumentation interceptor does: look at each request's typed input once the
/// operation is known, and (optionally) at its outcome. [`Observe`] turns one into an SDK
/// interceptor, so the hooks and the metadata lookup are written once.
pub trait Observer: std::fmt::Debug + Send + Sync + 'static {
    /// The interceptor's name in the SDK's logs.
    const NAME: &'static str;

    /// A request of operation `meta` with its typed `input`, before it is serialized.
    fn on_request(&self, meta: &Metadata, input: &Input);

    /// What of `input` [`Observer::on_finish`] needs: the typed input is gone once the request
    /// is serialized, so whatever the finish prices by (a read's consistency) is noted here and
    /// handed back. Nothing by default.
    fn note(&self, _input: &Input) -> Option<Note> {
        None
    }

    /// A finished request (its output or error) with the [`Observer::note`] taken of its input;
    /// nothing by default.
    fn on_finish(&self, _context: &FinalizerInterceptorContextRef<'_>, _note: Option<&Note>) {}
}

/// What an [`Observer`] noted of a request's input for its finish.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Note {
    /// Whether a read asked for strong consistency, by table (`None`: the request did not say,
    /// DynamoDB's default, eventually consistent).
    pub consistent_read: Vec<(String, Option<bool>)>,
    /// The index a query read, if any.
    pub index: Option<String>,
}

impl Storable for Note {
    type Storer = StoreReplace<Self>;
}

/// An [`Observer`] as an SDK interceptor.
#[derive(Debug, Clone)]
pub struct Observe<O>(pub O);

impl<O: Observer> Intercept for Observe<O> {
    fn name(&self) -> &'static str {
        O::NAME
    }

    // Not `read_before_execution`: client interceptors run that hook before the operation's
    // configuration (and so its `Metadata`) is in the bag.
    fn read_before_serialization(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(meta) = cfg.load::<Metadata>() {
            self.0.on_request(meta, context.input());
        }
        if let Some(note) = self.0.note(context.input()) {
            cfg.interceptor_state().store_put(note);
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.on_finish(context, cfg.load::<Note>());
        Ok(())
    }
}

/// `clients` with `make(service)`'s interceptor added to each client (`dynamodb`, `sqs`,
/// `lambda`, `secretsmanager`, `events`: the IAM action prefixes), after the ones they carry.
pub fn with_interceptors<I: Intercept + 'static>(
    clients: Clients,
    make: impl Fn(&'static str) -> I,
) -> Clients {
    Clients {
        ddb: aws_sdk_dynamodb::Client::from_conf(
            clients.ddb.config().to_builder().interceptor(make("dynamodb")).build(),
        ),
        sqs: aws_sdk_sqs::Client::from_conf(
            clients.sqs.config().to_builder().interceptor(make("sqs")).build(),
        ),
        lambda: aws_sdk_lambda::Client::from_conf(
            clients.lambda.config().to_builder().interceptor(make("lambda")).build(),
        ),
        secrets: aws_sdk_secretsmanager::Client::from_conf(
            clients.secrets.config().to_builder().interceptor(make("secretsmanager")).build(),
        ),
        events: aws_sdk_eventbridge::Client::from_conf(
            clients.events.config().to_builder().interceptor(make("events")).build(),
        ),
        sns: aws_sdk_sns::Client::from_conf(
            clients.sns.config().to_builder().interceptor(make("sns")).build(),
        ),
        sfn: aws_sdk_sfn::Client::from_conf(
            clients.sfn.config().to_builder().interceptor(make("states")).build(),
        ),
        ecs: aws_sdk_ecs::Client::from_conf(
            clients.ecs.config().to_builder().interceptor(make("ecs")).build(),
        ),
    }
}
