import { gatewayError } from '../errors.js'
import { PROVIDER_ITEM, type ProviderItem } from '../wire.js'

/**
 * A provider's item a door cannot show: left out when the provider ran it (its result is in the
 * text that follows), else the reply fails, naming the item's kind, for the client was meant to
 * act on it and would never know. Answers whether to leave it out.
 */
export function leftOut(item: ProviderItem, door: string): true {
  if (item[PROVIDER_ITEM].ranByProvider) return true
  throw gatewayError(
    'provider_unavailable',
    `the provider answered with a ${item.type} item, a call for the client to act on that ${door} cannot carry; ask /responses, which passes it through as it came`,
  )
}
