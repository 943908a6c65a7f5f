/**
 * The events the load drivers send: an order in the spec's shape, about 1.5 KB, so that intake
 * validates, stores and receivers get a body of a realistic size.
 */
export interface EventRequest {
  topic: 'order/create' | 'order/update';
  seller_id: number;
  entity_id: string;
  order: Record<string, unknown>;
  state_from: null;
  state_to: string;
  author: string;
}

export function orderEvent(sellerId: number, reference: string, topic: EventRequest['topic'] = 'order/create'): EventRequest {
  return {
    topic,
    seller_id: sellerId,
    entity_id: reference,
    order: {
      id: 1000,
      reference_order: reference,
      marketplace_connection: 1,
      status: 'APRO',
      status_message: 'Pago aprobado',
      creation_date: '2026-11-22T10:00:00-03:00',
      company_id: sellerId,
      products_subtotal: 15999.9,
      shipping_subtotal: 1200,
      marketplace: { code: 'bench', configuration_name: 'Bench', logoUrl: 'https://example.com/logo.png', generic: false },
      seller: { id: sellerId, name: 'Bench seller', active: true, logo: '', logoUrl: '', testing: false },
      billing_address: { id: 1, name: 'Ana', surname: 'Pérez', email: 'ana@example.com', province: 'BA', city: 'CABA', address: 'Av. Siempre Viva', number: '742', zip_code: '1000', document: { type: 'DNI', number: '30111222' } },
      shipping_address: { id: 2, name: 'Ana', surname: 'Pérez', email: 'ana@example.com', address: 'Av. Siempre Viva', number: '742', province: 'BA', city: 'CABA', zip_code: '1000', status: 'ok' },
      payments: [{ id: 1, gateway: 'mp', payment_amount: 17199.9, payment_date: '2026-11-22T10:00:01-03:00', transaction_type: 'sale', type: 'credit_card' }],
      products: [
        { id: 1, productId: 10, quantity: 2, sku: 'SKU-10', unit_price: 5000, unit_price_with_taxes: 6050, name: 'Mate de calabaza' },
        { id: 2, productId: 11, quantity: 1, sku: 'SKU-11', unit_price: 5999.9, unit_price_with_taxes: 7259.88, name: 'Bombilla de alpaca' },
      ],
      invoice: { number: null, url: null, sent_to_marketplace: false },
      documents: [],
    },
    state_from: null,
    state_to: 'APRO',
    author: 'bench',
  };
}

/**
 * Revision `revision` of publication `id` (about 1.5 KB), as a `publication/update` event without
 * `changes`: from the second revision on, Plaza computes them against the snapshot of the one
 * before (the price and the stock change with every revision, the rest stays).
 */
export function publicationUpdate(sellerId: number, connectionId: number, id: number, revision: number) {
  return {
    topic: 'publication/update' as const,
    seller_id: sellerId,
    entity_id: id,
    marketplace_connection_id: connectionId,
    publication: {
      id,
      sku: `SKU-${id}`,
      title: 'Mate de calabaza curado, con virola de alpaca y bombilla',
      price: 5000 + revision * 10,
      stock: 100 - revision,
      active: true,
      revisionStatus: 'APPROVED',
      createdAt: '2026-11-01T10:00:00-03:00',
      product: {
        id: 10_000 + id,
        sku: `SKU-${id}`,
        name: 'Mate de calabaza',
        description: 'Mate de calabaza curado a mano, virola de alpaca cincelada, base de cuero. Incluye bombilla de alpaca y cepillo de limpieza.',
        brand: 'Bench',
        dimensions: { height: 12, width: 9, depth: 9, weight: 0.35 },
        images: [
          { name: 'front.jpg', position: 1, url: 'https://example.com/images/front.jpg' },
          { name: 'side.jpg', position: 2, url: 'https://example.com/images/side.jpg' },
        ],
      },
      marketplaceConnection: { id: connectionId, configName: 'main', seller: { id: sellerId, name: 'Bench seller', active: true }, marketplace: { id: 1, codigo: 'bench', name: 'Bench' } },
      publicationOptions: [
        { id: 1, name: 'Color', value: 'Marrón', stock: 60 - revision },
        { id: 2, name: 'Color', value: 'Negro', stock: 40 },
      ],
    },
    author: 'bench',
  };
}
